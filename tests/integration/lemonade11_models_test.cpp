// Lemonade 11's per-model routes and its registry against the real router:
// models/{id}/options (saved, effective and default values with their
// sources), models/register, models/{id}/files, pulls the router owns
// (downloads, downloads/control), registry/search, pull/variants and
// models/check-updates, against a fake Hugging Face hub on loopback.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "support/fake_hub.h"
#include "support/http_client.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kRepo = "org/tiny-GGUF";

class Lemonade11ModelsTest : public RouterTest {
 protected:
  void start_with_hub(std::map<std::string, std::string> extra = {}) {
    hub_.add_random_file(kRepo, "tiny-Q4_0.gguf", 3u << 20, 1);
    hub_.add_random_file(kRepo, "tiny-Q8_0.gguf", 2u << 20, 2);
    hub_.add_file(kRepo, "mmproj-tiny-F16.gguf", "projector weights");
    hub_.add_file(kRepo, "mtp-tiny.gguf", "draft weights");
    ASSERT_TRUE(hub_.start());
    extra["HF_ENDPOINT"] = hub_.endpoint();
    ASSERT_NO_FATAL_FAILURE(start_router({}, extra));
  }
  json job(const std::string& id) {
    const json jobs = http_get(port(), "/api/v1/downloads").json();
    for (const auto& j : jobs) {
      if (j["id"] == id) {
        return j;
      }
    }
    return nullptr;
  }
  FakeHub hub_;
};

TEST_F(Lemonade11ModelsTest, OptionsAreSavedShownWithTheirSourcesAndUsedByTheNextLoad) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--ctx-size", "3072"}));
  json view = http_get(port(), "/api/v1/models/a/options").json();
  EXPECT_EQ(view["model_name"], "a");
  EXPECT_EQ(view["canonical_model_name"], "user.a");
  EXPECT_EQ(view["saved"], json::object());
  EXPECT_EQ(view["effective"]["ctx_size"], 3072) << view.dump();
  EXPECT_EQ(view["sources"]["ctx_size"], "config");
  EXPECT_EQ(view["sources"]["parallel"], "default");

  HttpReply saved = http_post(port(), "/api/v1/models/user.a/options", json{{"ctx_size", 2048}});
  ASSERT_EQ(saved.status, 200) << saved.body;
  EXPECT_EQ(saved.json()["saved"], (json{{"ctx_size", 2048}}));
  EXPECT_EQ(saved.json()["effective"]["ctx_size"], 2048);
  EXPECT_EQ(saved.json()["sources"]["ctx_size"], "saved");
  std::ifstream in(env_.cache_dir() + "/recipe_options.json");
  EXPECT_EQ(json::parse(in)["user.a"], (json{{"ctx_size", 2048}}));
  EXPECT_TRUE(health(port())["all_models_loaded"].empty()) << "saving loads nothing";
  ASSERT_EQ(chat(port(), "a").status, 200);
  EXPECT_EQ(loaded_field(health(port()), "user.a", "recipe_options")["ctx_size"], 2048)
      << "an on-demand load uses the saved options";

  HttpReply dry =
      http_post(port(), "/v1/models/a/options", json{{"ctx_size", 1024}, {"dry_run", true}});
  ASSERT_EQ(dry.status, 200) << dry.body;
  EXPECT_EQ(dry.json()["effective"]["ctx_size"], 1024);
  EXPECT_EQ(dry.json()["saved"], (json{{"ctx_size", 2048}})) << "a dry run writes nothing";

  expect_error(http_post(port(), "/api/v1/models/a/options", json{{"bogus", 1}}), 400,
               "invalid_request_error", "bogus", "an unknown option");
  expect_error(http_post(port(), "/api/v1/models/a/options", json{{"ctx_size", "big"}}), 400,
               "invalid_request_error", "ctx_size", "a wrong type");
  expect_error(http_post(port(), "/api/v1/models/a/options", json{{"pinned", true}}), 400,
               "invalid_request_error", "pinned", "a pin");
  HttpReply forgot = http_post(port(), "/api/v1/models/a/options", json{{"ctx_size", nullptr}});
  EXPECT_EQ(forgot.json()["saved"], json::object()) << forgot.body;
  ASSERT_EQ(http_post(port(), "/api/v1/models/a/options", json{{"ctx_size", 1536}}).status, 200);
  HttpReply deleted = http_request(port(), "DELETE", "/api/v1/models/a/options");
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(deleted.json()["saved"], json::object());
  expect_error(http_get(port(), "/api/v1/models/nope/options"), 404, "model_not_found", "model",
               "an unknown model");
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.a").json()["id"], "user.a")
      << "models/{id} is not swallowed by the /options route, nor the reverse";
}

TEST_F(Lemonade11ModelsTest, RegisterAddsAModelWithoutDownloadingItAndFilesListsWhatIsOnDisk) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply r = http_post(
      port(), "/api/v1/models/register",
      json{{"model_name", "user.r"}, {"checkpoint", "org/r-GGUF:Q4_0"}, {"recipe", "llamacpp"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["model_name"], "r");
  EXPECT_EQ(r.json()["canonical_model_name"], "user.r");
  EXPECT_EQ(r.json()["model"]["downloaded"], false);
  expect_error(
      http_post(
          port(), "/api/v1/models/register",
          json{{"model_name", "r2"}, {"checkpoint", "org/r-GGUF:Q4_0"}, {"recipe", "llamacpp"}}),
      400, "invalid_request_error", "model_name", "a name without user.");

  HttpReply files = http_get(port(), "/api/v1/models/a/files?include_paths=true");
  ASSERT_EQ(files.status, 200) << files.body;
  const json listed = files.json();
  ASSERT_EQ(listed["files"].size(), 1u) << files.body;
  const json& main = listed["files"][0];
  EXPECT_EQ(main["role"], "main");
  EXPECT_EQ(main["exists"], true);
  EXPECT_GT(main["size_bytes"].get<long long>(), 0);
  EXPECT_TRUE(fs::exists(main["path"].get<std::string>()));
  HttpReply missing = http_get(port(), "/api/v1/models/r/files");
  ASSERT_EQ(missing.status, 200) << missing.body;
  EXPECT_EQ(missing.json()["files"][0]["exists"], false);
  EXPECT_FALSE(missing.json()["files"][0].contains("path"));
}

TEST_F(Lemonade11ModelsTest, APullTheRouterOwnsIsListedPausedResumedAndRemoved) {
  ASSERT_NO_FATAL_FAILURE(start_with_hub());
  hub_.set_knobs(json::array(
      {{{"path", std::string(kRepo) + "/tiny-Q4_0.gguf"}, {"stall_after_bytes", 65536}}}));
  const json body = {{"model_name", "user.p"},
                     {"checkpoint", std::string(kRepo) + ":Q4_0"},
                     {"recipe", "llamacpp"},
                     {"stream", true},
                     {"subscribe", false}};
  HttpReply started = http_post(port(), "/api/v1/pull", body);
  ASSERT_EQ(started.status, 200) << started.body;
  EXPECT_EQ(started.header("Content-Type"), "application/json");
  EXPECT_EQ(started.json()["id"], "model:user.p");
  EXPECT_EQ(started.json()["status"], "downloading");
  ASSERT_TRUE(hub_.wait_stalled(std::string(kRepo) + "/tiny-Q4_0.gguf"));
  EXPECT_EQ(job("model:user.p")["running"], true) << "the client left; the pull goes on";

  HttpReply paused = http_post(port(), "/api/v1/downloads/control",
                               json{{"id", "model:user.p"}, {"action", "pause"}});
  ASSERT_EQ(paused.status, 200) << paused.body;
  EXPECT_EQ(paused.json()["status"], "paused");
  EXPECT_EQ(job("model:user.p")["status"], "paused");

  hub_.set_knobs(json::array());
  ASSERT_EQ(http_post(port(), "/api/v1/pull", body).status, 200) << "pulling again resumes";
  ASSERT_TRUE(eventually([&] { return job("model:user.p")["status"] == "completed"; }))
      << job("model:user.p").dump();
  EXPECT_EQ(job("model:user.p")["percent"], 100);
  EXPECT_EQ(http_get(port(), "/api/v1/models/p").json()["downloaded"], true);

  EXPECT_EQ(http_post(port(), "/api/v1/downloads/control",
                      json{{"id", "model:user.p"}, {"action", "remove"}})
                .json(),
            (json{{"status", "ok"}}));
  EXPECT_EQ(job("model:user.p"), nullptr);
  EXPECT_EQ(http_post(port(), "/api/v1/downloads/control", json{{"id", "x"}, {"action", "remove"}})
                .json(),
            (json{{"status", "ok"}, {"missing", true}}));
  expect_error(
      http_post(port(), "/api/v1/downloads/control", json{{"id", "x"}, {"action", "pause"}}), 404,
      "model_not_found", "id", "an unknown download");
  expect_error(http_post(port(), "/api/v1/downloads/control",
                         json{{"id", "model:user.p"}, {"action", "explode"}}),
               400, "invalid_request_error", "action", "an unknown action");
}

TEST_F(Lemonade11ModelsTest, SearchAndVariantsAskTheHubAndSayWhenTheyCouldNot) {
  ASSERT_NO_FATAL_FAILURE(start_with_hub());
  HttpReply found = http_get(port(), "/api/v1/registry/search?query=tiny&limit=5");
  ASSERT_EQ(found.status, 200) << found.body;
  EXPECT_EQ(found.json()["offline"], false);
  ASSERT_EQ(found.json()["results"].size(), 1u) << found.body;
  EXPECT_EQ(found.json()["results"][0]["repository_id"], kRepo);
  expect_error(http_get(port(), "/api/v1/registry/search?query=ti"), 400, "invalid_request_error",
               "query", "a short query");
  expect_error(http_get(port(), "/api/v1/registry/search?query=tiny&source=modelscope"), 400,
               "invalid_request_error", "source", "another registry");

  HttpReply variants = http_get(port(), std::string("/api/v1/pull/variants?checkpoint=") + kRepo);
  ASSERT_EQ(variants.status, 200) << variants.body;
  json names = json::array();
  const json listed = variants.json();
  for (const auto& v : listed["variants"]) {
    names.push_back(v["name"]);
  }
  EXPECT_EQ(names, (json{"Q4_0", "Q8_0"})) << variants.body;
  EXPECT_EQ(variants.json()["mmproj_files"], (json{"mmproj-tiny-F16.gguf"}));
  EXPECT_EQ(variants.json()["draft_files"], (json{"mtp-tiny.gguf"}));
  expect_error(http_get(port(), "/api/v1/pull/variants"), 400, "invalid_request_error",
               "checkpoint", "no checkpoint");
  expect_error(http_get(port(), "/api/v1/pull/variants?checkpoint=noslash"), 400,
               "invalid_request_error", "checkpoint", "no owner/name");
  expect_error(http_get(port(), "/api/v1/pull/variants?checkpoint=org/none"), 404,
               "remote_not_found", "checkpoint", "an unknown repository");
}

TEST_F(Lemonade11ModelsTest, OfflineSearchAndVariantsAnswerFromTheLocalCache) {
  hub_.add_random_file(kRepo, "tiny-Q4_0.gguf", 1u << 20, 1);
  ASSERT_TRUE(hub_.start());
  ASSERT_NO_FATAL_FAILURE(start_router({}, {{"HF_ENDPOINT", hub_.endpoint()}}));
  ASSERT_EQ(http_post(port(), "/api/v1/pull",
                      json{{"model_name", "user.p"},
                           {"checkpoint", std::string(kRepo) + ":Q4_0"},
                           {"recipe", "llamacpp"}})
                .status,
            200);
  ASSERT_NO_FATAL_FAILURE(start_router({}, {{"LEMONADE_OFFLINE", "1"}}));
  HttpReply found = http_get(port(), "/api/v1/registry/search?query=org/tiny");
  ASSERT_EQ(found.status, 200) << found.body;
  EXPECT_EQ(found.json()["offline"], true);
  EXPECT_NE(found.json()["message"].get<std::string>().find("offline"), std::string::npos);
  ASSERT_EQ(found.json()["results"].size(), 1u) << found.body;
  HttpReply variants = http_get(port(), std::string("/api/v1/pull/variants?checkpoint=") + kRepo);
  ASSERT_EQ(variants.status, 200) << variants.body;
  EXPECT_EQ(variants.json()["offline"], true);
  EXPECT_EQ(variants.json()["variants"][0]["name"], "Q4_0");
  expect_error(http_post(port(), "/api/v1/models/check-updates", json::object()), 409, "conflict",
               "", "an update check offline");
}

TEST_F(Lemonade11ModelsTest, CheckUpdatesNamesTheModelsWhoseRepositoryMoved) {
  ASSERT_NO_FATAL_FAILURE(start_with_hub());
  ASSERT_EQ(http_post(port(), "/api/v1/pull",
                      json{{"model_name", "user.p"},
                           {"checkpoint", std::string(kRepo) + ":Q8_0"},
                           {"recipe", "llamacpp"}})
                .status,
            200);
  HttpReply none = http_post(port(), "/api/v1/models/check-updates", json::object());
  ASSERT_EQ(none.status, 200) << none.body;
  EXPECT_EQ(none.json()["updates_available"], 0) << none.body;
  hub_.add_file(kRepo, "README.md", "a new revision\n");
  HttpReply moved = http_post(port(), "/api/v1/models/check-updates", json::object());
  ASSERT_EQ(moved.status, 200) << moved.body;
  EXPECT_EQ(moved.json()["models"], (json{"p"})) << moved.body;
}

}  // namespace
}  // namespace lemon::testing
