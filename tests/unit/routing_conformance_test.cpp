// Lemonade 11's routing conformance cases (tests/data/routing/*.json, taken
// as data from Lemonade v11.7.0's test/conformance/routing/1/): each request
// through our parser and engine must give exactly the recorded decision,
// every field, with the trace when the request asks for it.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "lemon/routing/route_engine.h"

namespace lemon::routing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path data_dir() {
  return fs::path(LEMON_SOURCE_DIR) / "tests" / "data" / "routing";
}

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::vector<fs::path> groups() {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(data_dir())) {
    if (entry.path().extension() == ".json") {
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(RoutingConformance, EveryRecordedDecisionIsReproduced) {
  const auto files = groups();
  ASSERT_EQ(files.size(), 9u) << "one file per group of Lemonade's corpus";
  int cases = 0;
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    const json group = read_json(file);
    auto policy = parse_route_policy(group["policy"]);
    ASSERT_TRUE(policy.ok()) << policy.error().message();
    for (const auto& c : group["cases"]) {
      SCOPED_TRACE(c["name"].get<std::string>());
      const json& request = c["request"];
      auto trace = route_trace_requested(request);
      ASSERT_TRUE(trace.ok());
      const Decision d = decide(**policy, route_input_from_body(request), {}, nullptr, *trace);
      EXPECT_EQ(decision_json(d, *trace), c["decision"]);
      EXPECT_EQ(route_header(d), d.default_used ? "default" : c["decision"]["matched_rule"]);
      ++cases;
    }
  }
  EXPECT_EQ(cases, 63);
}

}  // namespace
}  // namespace lemon::routing
