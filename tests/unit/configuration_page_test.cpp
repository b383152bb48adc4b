// docs/configuration.md's table of settings is what the router's own
// option definitions print (`lemonade-router --settings-markdown`, issue
// #30 §1): a setting added, renamed or made live without the page fails
// here.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace lemon {
namespace {

std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return out;
  }
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) {
    out.append(buf, n);
  }
  ::pclose(pipe);
  return out;
}

TEST(ConfigurationPage, ListsEverySetting) {
  // A clean environment: no config.json or variable may change the table.
  const std::string printed = run(std::string("env -i HOME=/nonexistent PATH=/usr/bin:/bin '") +
                                  LEMON_ROUTER_BIN + "' --settings-markdown");
  ASSERT_NE(printed.find("| `port` | `--port` | `LEMONADE_PORT` |"), std::string::npos) << printed;
  std::ifstream in(std::string(LEMON_SOURCE_DIR) + "/docs/configuration.md");
  std::stringstream page;
  page << in.rdbuf();
  const std::string text = page.str();
  const std::string begin = "<!-- settings:begin -->\n";
  const auto from = text.find(begin);
  const auto to = text.find("<!-- settings:end -->");
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  EXPECT_EQ(text.substr(from + begin.size(), to - from - begin.size()), printed)
      << "docs/configuration.md is out of date: paste `lemonade-router --settings-markdown`";
}

}  // namespace
}  // namespace lemon
