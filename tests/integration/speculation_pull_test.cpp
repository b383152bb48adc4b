// A draft model pulled and deleted with the models that name it: the real
// router pulls Lemonade 11's {"checkpoints": {"main", "draft"}} from a fake
// Hugging Face hub, passes the draft to the fake llama-server, and deletes a
// model's draft only when no other registered model still uses it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/fake_hub.h"
#include "support/http_client.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string pulled_flag_value(const std::vector<std::string>& argv, const std::string& flag) {
  auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

// The GGUF files of a repository's current snapshot in the hub cache.
std::vector<std::string> snapshot_files(const fs::path& repo) {
  std::vector<std::string> out;
  if (!fs::exists(repo / "snapshots")) {
    return out;
  }
  for (const auto& e : fs::recursive_directory_iterator(repo / "snapshots")) {
    if (!e.is_directory()) {
      out.push_back(e.path().filename().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

class SpeculationPull : public RouterTest {
 protected:
  void SetUp() override {
    hub_.add_random_file("org/big-GGUF", "big-Q4_0.gguf", 1u << 20, 1);
    hub_.add_random_file("org/other-GGUF", "other-Q4_0.gguf", 1u << 20, 2);
    hub_.add_random_file("org/draft-GGUF", "draft-Q8_0.gguf", 512u << 10, 3);
    hub_.add_random_file("org/draft-GGUF", "draft-Q4_0.gguf", 256u << 10, 4);
    ASSERT_TRUE(hub_.start());
    ASSERT_NO_FATAL_FAILURE(start_router({}, {{"HF_ENDPOINT", hub_.endpoint()}}));
  }

  static Json pull(const std::string& name, const std::string& main) {
    return {{"model_name", name},
            {"checkpoints", {{"main", main}, {"draft", "org/draft-GGUF:Q8_0"}}},
            {"recipe", "llamacpp"}};
  }

  fs::path repo(const std::string& name) const {
    return fs::path(env_.hf_cache()) / ("models--org--" + name);
  }

  FakeHub hub_;
};

TEST_F(SpeculationPull, PullingAModelPullsItsDraftAndDeletingKeepsASharedOne) {
  HttpReply a = http_post(port(), "/api/v1/pull", pull("user.a", "org/big-GGUF:Q4_0"));
  ASSERT_EQ(a.status, 200) << a.body;
  // The draft's variant alone, as a main checkpoint's.
  EXPECT_EQ(snapshot_files(repo("draft-GGUF")), std::vector<std::string>{"draft-Q8_0.gguf"});
  std::ifstream users_file(fs::path(env_.cache_dir()) / "user_models.json");
  const Json users = Json::parse(users_file);
  EXPECT_EQ(users["a"]["checkpoints"]["draft"], "org/draft-GGUF:Q8_0") << users.dump();
  const Json listed = http_get(port(), "/api/v1/models/user.a").json();
  EXPECT_EQ(listed["downloaded"], true) << listed.dump();

  // The draft reaches llama-server, which drafts with it.
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  const Json entry = *loaded_entry(health(port()), "user.a");
  const auto argv = fake_state(entry["backend_url"]).value("argv", std::vector<std::string>{});
  EXPECT_EQ(fs::path(pulled_flag_value(argv, "-md")).filename(), "draft-Q8_0.gguf");
  EXPECT_EQ(pulled_flag_value(argv, "--spec-type"), "draft-simple");
  EXPECT_EQ(entry["speculation"], (Json{{"draft", "org/draft-GGUF:Q8_0"}, {"mtp", false}}));

  HttpReply b = http_post(port(), "/api/v1/pull", pull("user.b", "org/other-GGUF:Q4_0"));
  ASSERT_EQ(b.status, 200) << b.body;

  // user.b still needs the draft: deleting user.a keeps it.
  ASSERT_EQ(http_post(port(), "/api/v1/delete", Json{{"model_name", "user.a"}}).status, 200);
  EXPECT_TRUE(snapshot_files(repo("big-GGUF")).empty());
  EXPECT_EQ(snapshot_files(repo("draft-GGUF")), std::vector<std::string>{"draft-Q8_0.gguf"});
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.b").json()["downloaded"], true);

  // The last model that names it takes it along.
  ASSERT_EQ(http_post(port(), "/api/v1/delete", Json{{"model_name", "user.b"}}).status, 200);
  EXPECT_TRUE(snapshot_files(repo("draft-GGUF")).empty());
  EXPECT_TRUE(snapshot_files(repo("other-GGUF")).empty());
}

}  // namespace
}  // namespace lemon::testing
