// llama-server's router API over the model store, against the real router,
// the fake llama-server and the fake Hugging Face hub: POST /models pulls
// into the cache with its progress on /models/sse, /models/unload cancels a
// running pull, DELETE /models removes the files, ?reload=1 unloads a model
// whose file vanished, /metrics?model= keeps that model's samples, and a
// preset file's load-on-startup loads its model with no request.
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/fake_hub.h"
#include "support/http_client.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// GET /models' status value of `id` ("" when it is not listed).
std::string listed_status(int port, const std::string& id) {
  auto r = http_get(port, "/models");
  EXPECT_EQ(r.status, 200) << r.body;
  for (const auto& e : r.json().value("data", Json::array())) {
    if (e.value("id", "") == id) {
      return e["status"].value("value", "");
    }
  }
  return "";
}

// The /models/sse events of `model` until one named `last`, as their names.
std::vector<std::string> store_events_until(SseStream& s, const std::string& model,
                                            const std::string& last) {
  std::vector<std::string> seen;
  while (auto e = s.next_data()) {
    auto j = Json::parse(e->data, nullptr, false);
    if (!j.is_object() || j.value("model", "") != model) {
      continue;
    }
    seen.push_back(j.value("event", ""));
    if (seen.back() == last) {
      break;
    }
  }
  return seen;
}

class LlamaCppStoreTest : public RouterTest {
 protected:
  void start_with_hub(const std::vector<std::string>& args = {}) {
    hub_.add_random_file("org/small-GGUF", "small-Q4_0.gguf", 3u << 20, 7);
    ASSERT_TRUE(hub_.start());
    ASSERT_NO_FATAL_FAILURE(start_router(args, {{"HF_ENDPOINT", hub_.endpoint()}}));
  }
  fs::path repo() const { return fs::path(env_.hf_cache()) / "models--org--small-GGUF"; }

  FakeHub hub_;
};

TEST_F(LlamaCppStoreTest, PostModelsPullsWithProgressAndDeleteRemovesTheFiles) {
  ASSERT_NO_FATAL_FAILURE(start_with_hub());
  SseStream sse(port(), "GET", "/models/sse", "", {});
  ASSERT_TRUE(sse.read_head());
  ASSERT_EQ(sse.status(), 200);

  auto pulled = http_post(port(), "/models", Json{{"model", "org/small-GGUF:Q4_0"}});
  ASSERT_EQ(pulled.status, 200) << pulled.body;
  EXPECT_EQ(pulled.json(), (Json{{"success", true}}));
  const auto seen = store_events_until(sse, "org/small-GGUF:Q4_0", "download_finished");
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), "download_finished") << ::testing::PrintToString(seen);
  EXPECT_EQ(seen.front(), "download_progress") << ::testing::PrintToString(seen);
  ASSERT_TRUE(eventually([&] {
    return listed_status(port(), "org/small-GGUF:Q4_0") == "unloaded";
  })) << http_get(port(), "/models").body;
  ASSERT_TRUE(fs::exists(repo() / "snapshots"));

  auto again = http_post(port(), "/models", Json{{"model", "org/small-GGUF:Q4_0"}});
  expect_error(again, 400, "invalid_request_error", "model", "a second pull of a pulled model");

  auto removed = http_request(port(), "DELETE", "/models?model=org/small-GGUF:Q4_0");
  ASSERT_EQ(removed.status, 200) << removed.body;
  bool any_gguf = false;
  if (fs::exists(repo())) {
    for (const auto& e : fs::recursive_directory_iterator(repo())) {
      any_gguf = any_gguf || e.path().extension() == ".gguf";
    }
  }
  EXPECT_FALSE(any_gguf) << "the weights are gone from the cache";
  const auto after = store_events_until(sse, "org/small-GGUF:Q4_0", "model_remove");
  EXPECT_EQ(after.empty() ? "" : after.back(), "model_remove");

  auto unknown = http_request(port(), "DELETE", "/models?model=org/none-GGUF:Q4_0");
  EXPECT_GE(unknown.status, 400) << unknown.body;
  EXPECT_TRUE(is_error_envelope(unknown.json())) << unknown.body;
}

TEST_F(LlamaCppStoreTest, UnloadCancelsARunningPull) {
  ASSERT_NO_FATAL_FAILURE(start_with_hub());
  hub_.set_knobs({{{"path", "org/small-GGUF/small-Q4_0.gguf"}, {"stall_after_bytes", 65536}}});
  auto pulled = http_post(port(), "/models", Json{{"model", "org/small-GGUF:Q4_0"}});
  ASSERT_EQ(pulled.status, 200) << pulled.body;
  ASSERT_TRUE(hub_.wait_stalled("org/small-GGUF/small-Q4_0.gguf"));
  EXPECT_EQ(listed_status(port(), "org/small-GGUF:Q4_0"), "downloading");

  auto unloaded = http_post(port(), "/models/unload", Json{{"model", "org/small-GGUF:Q4_0"}});
  ASSERT_EQ(unloaded.status, 200) << unloaded.body;
  EXPECT_EQ(unloaded.json(), (Json{{"success", true}}));
  // The answer came once the pull had ended: nothing is downloading, and
  // the model is not listed as served.
  const std::string status = listed_status(port(), "org/small-GGUF:Q4_0");
  EXPECT_NE(status, "downloading");
  EXPECT_NE(status, "downloaded");
  auto model = http_get(port(), "/api/v1/models/org/small-GGUF:Q4_0");
  if (model.status == 200) {
    EXPECT_EQ(model.json()["downloaded"], false) << model.body;
  }
  expect_nothing_loaded();
}

TEST_F(LlamaCppStoreTest, ReloadUnloadsAModelWhoseFileVanished) {
  const std::string a = env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "2"}));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  ASSERT_NO_FATAL_FAILURE(load_ok("user.b"));
  SseStream sse(port(), "GET", "/models/sse", "", {});
  ASSERT_TRUE(sse.read_head());

  fs::remove(a);
  auto listed = http_get(port(), "/models?reload=1");
  ASSERT_EQ(listed.status, 200) << listed.body;
  EXPECT_FALSE(loaded_entry(health(port()), "user.a").has_value()) << "its file is gone";
  EXPECT_TRUE(loaded_entry(health(port()), "user.b").has_value()) << "an unchanged one runs on";
  EXPECT_EQ(router().count_log("reload: 'user.a' changed or vanished"), 1) << router().log_text();
  auto seen = store_events_until(sse, "*", "models_reload");
  EXPECT_EQ(seen.empty() ? "" : seen.back(), "models_reload");
}

TEST_F(LlamaCppStoreTest, MetricsOfOneModelKeepOnlyItsSamples) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(chat(port(), "user.a").status, 200);
  ASSERT_EQ(chat(port(), "user.b").status, 200);
  auto all = http_get(port(), "/metrics");
  ASSERT_EQ(all.status, 200);
  ASSERT_NE(all.body.find("model=\"user.b\""), std::string::npos) << all.body;
  auto one = http_get(port(), "/metrics?model=a");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_NE(one.body.find("model=\"user.a\""), std::string::npos) << one.body;
  EXPECT_EQ(one.body.find("model=\"user.b\""), std::string::npos) << one.body;
  EXPECT_NE(one.body.find("# TYPE"), std::string::npos) << "still Prometheus text";
}

TEST_F(LlamaCppStoreTest, LoadOnStartupLoadsThePresetWithNoRequest) {
  const std::string file = env_.add_llm("a");
  const std::string ini = env_.root() + "/models.ini";
  write_file_atomically(ini, "version = 1\n[eager]\nmodel = " + file +
                                 "\nload-on-startup = true\n\n[lazy]\nmodel = " + file +
                                 "\nc = 1024\n");
  ASSERT_NO_FATAL_FAILURE(start_router({"--models-preset", ini}));
  ASSERT_TRUE(eventually([&] { return listed_status(port(), "eager") == "loaded"; }))
      << http_get(port(), "/models").body;
  EXPECT_EQ(listed_status(port(), "lazy"), "unloaded");
}

}  // namespace
}  // namespace lemon::testing
