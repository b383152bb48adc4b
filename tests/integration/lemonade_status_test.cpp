// The management routes' error statuses against Lemonade 9.4.1 (issue #25):
// `POST delete` answers 422 for a delete it cannot do, as Lemonade does, on
// both API prefixes, with our envelope and code; Ollama's delete keeps 404;
// and every row of docs/api.md "Differences from Lemonade 9.4.1" is sent to a
// running router and checked, so the documented list is the tested one.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/http_client.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

// One row of the documented table.
struct StatusRow {
  std::string method;
  std::string path;
  std::string body;
  int status = 0;
  std::string code;  // "" when the row names none
};

std::string read_api_doc() {
  std::ifstream in(std::string(LEMON_SOURCE_DIR) + "/docs/api.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The rows between the status-table markers: the request cell is
// `METHOD PATH BODY`, the third cell `STATUS` or `STATUS \`code\``.
std::vector<StatusRow> documented_rows() {
  const std::string doc = read_api_doc();
  const auto begin = doc.find("<!-- status-table: begin -->");
  const auto end = doc.find("<!-- status-table: end -->");
  if (begin == std::string::npos || end == std::string::npos) {
    return {};
  }
  std::istringstream table(doc.substr(begin, end - begin));
  static const std::regex kRow(
      R"(^\| `(GET|POST) (/\S+) ?(.*)` \| [^|]+ \| (\d{3})(?: `([a-z_]+)`)? \| [^|]+ \|$)");
  std::vector<StatusRow> rows;
  for (std::string line; std::getline(table, line);) {
    std::smatch m;
    if (std::regex_match(line, m, kRow)) {
      rows.push_back({m[1], m[2], m[3], std::stoi(m[4]), m[5]});
    }
  }
  return rows;
}

class LemonadeStatusTest : public RouterTest {
 protected:
  // The router the table describes: user.a downloaded (not loaded),
  // extra.tiny.gguf from --extra-models-dir, the built-in catalogue (with
  // its FLM models).
  void start_documented_router() {
    env_.add_llm("a");
    const std::string extra = env_.root() + "/extra-models";
    std::filesystem::create_directories(extra);
    std::ofstream(extra + "/tiny.gguf") << "GGUF";
    start_router({"--extra-models-dir", extra});
  }
};

TEST_F(LemonadeStatusTest, EveryDocumentedStatusIsTheOneAnswered) {
  const auto rows = documented_rows();
  ASSERT_GE(rows.size(), 20u) << "docs/api.md's status table was not found or lost rows";
  // Every management route the issue names has at least one row.
  std::set<std::string> routes;
  for (const auto& row : rows) {
    routes.insert(row.path.substr(row.path.rfind('/') + 1));
  }
  for (const char* route :
       {"pull", "delete", "load", "unload", "install", "uninstall", "params", "log-level"}) {
    EXPECT_TRUE(routes.contains(route)) << "no documented row for " << route;
  }
  ASSERT_NO_FATAL_FAILURE(start_documented_router());
  ASSERT_EQ(http_get(port(), "/api/v1/models/extra.tiny.gguf").status, 200)
      << "the extra models folder was not scanned";
  for (const auto& row : rows) {
    const std::string what = row.method + " " + row.path + " " + row.body;
    HttpReply r = http_request(port(), row.method, row.path, row.body);
    EXPECT_EQ(r.status, row.status) << what << " -> " << r.body;
    EXPECT_TRUE(is_error_envelope(r.json())) << what << " -> " << r.body;
    if (!row.code.empty()) {
      EXPECT_EQ(r.json()["error"]["code"], row.code) << what << " -> " << r.body;
    }
  }
  // Nothing in the table changed what the router holds: every model is
  // still there and nothing was loaded or unloaded by a malformed request.
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.a").status, 200);
  EXPECT_EQ(http_get(port(), "/api/v1/models/extra.tiny.gguf").status, 200);
  EXPECT_TRUE(loaded_names(health(port())).empty());
}

TEST_F(LemonadeStatusTest, DeleteAnswers422ForWhatItCannotDeleteOnBothPrefixes) {
  ASSERT_NO_FATAL_FAILURE(start_documented_router());
  struct Case {
    std::string model;
    std::string code;
  };
  const std::vector<Case> cases = {{"NonExistentModel-XYZ-123", "model_not_found"},
                                   {"user.NotRegistered", "model_not_found"},
                                   {"Qwen3-0.6B-GGUF", "model_not_downloaded"},
                                   {"gpt-oss-20b-FLM", "unsupported_operation"},
                                   {"extra.tiny.gguf", "unsupported_operation"}};
  for (const char* prefix : {"/api/v0", "/api/v1"}) {
    for (const auto& c : cases) {
      HttpReply r =
          http_post(port(), std::string(prefix) + "/delete", json{{"model_name", c.model}});
      EXPECT_EQ(r.status, 422) << prefix << " " << c.model << ": " << r.body;
      ASSERT_TRUE(is_error_envelope(r.json())) << r.body;
      EXPECT_EQ(r.json()["error"]["code"], c.code) << prefix << " " << c.model;
      EXPECT_EQ(r.json()["error"]["type"], "invalid_request_error") << r.body;
    }
  }
  // FLM's message names the command that does delete it.
  HttpReply flm = http_post(port(), "/api/v1/delete", json{{"model_name", "gpt-oss-20b-FLM"}});
  EXPECT_NE(flm.json()["error"]["message"].get<std::string>().find("flm remove"), std::string::npos)
      << flm.body;
}

TEST_F(LemonadeStatusTest, ARegisteredModelWithoutFilesIsStillUnregisteredWith200) {
  env_.add_user_model("nofiles", {{"checkpoint", "org/none-GGUF:Q4_0"}, {"recipe", "llamacpp"}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply r = http_post(port(), "/api/v1/delete", json{{"model_name", "user.nofiles"}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.nofiles").status, 404);
  // Deleting it again: it is no longer registered.
  HttpReply again = http_post(port(), "/api/v1/delete", json{{"model_name", "user.nofiles"}});
  EXPECT_EQ(again.status, 422) << again.body;
  EXPECT_EQ(again.json()["error"]["code"], "model_not_found");
}

TEST_F(LemonadeStatusTest, OllamasDeleteKeepsOllamas404) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply r = http_request(port(), "DELETE", "/api/delete",
                             json{{"model", "NonExistentModel-XYZ-123"}}.dump());
  EXPECT_EQ(r.status, 404) << r.body;
  ASSERT_TRUE(r.json()["error"].is_string()) << "Ollama's shape {\"error\": \"...\"}: " << r.body;
}

}  // namespace
}  // namespace lemon::testing
