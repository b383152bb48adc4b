// llama-server's router API (api/llamacpp) against the real router and the
// fake llama-server: /health at the root, GET /models' status through a
// load and an unload (and the same sequence on /models/sse, in order),
// POST /models/load refusing a model already loading or loaded, /props,
// the root inference routes, and autoload off per request and by flag.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using LlamaCppRouterApiTest = RouterTest;

// GET /models' entry whose id is `id`; null when it is not listed.
nlohmann::json models_entry(int port, const std::string& id) {
  auto r = http_get(port, "/models");
  EXPECT_EQ(r.status, 200) << r.body;
  for (const auto& e : r.json().value("data", nlohmann::json::array())) {
    if (e.value("id", "") == id) {
      return e;
    }
  }
  return nullptr;
}

std::string status_of(int port, const std::string& id) {
  auto e = models_entry(port, id);
  if (!e.is_object()) {
    return "";
  }
  return e["status"].value("value", "");
}

// The model events of `id` on /models/sse until one says `last`, each as
// "<event>:<status>"; the data of the progress events goes to *progress.
std::vector<std::string> sse_statuses_until(SseStream& s, const std::string& id,
                                            const std::string& last,
                                            std::vector<nlohmann::json>* progress) {
  std::vector<std::string> seen;
  while (auto e = s.next_data()) {
    auto j = nlohmann::json::parse(e->data, nullptr, false);
    EXPECT_TRUE(j.is_object()) << e->data;
    if (!j.is_object() || j.value("model", "") != id || !j.contains("data")) {
      continue;
    }
    const std::string status = j["data"].value("status", "");
    seen.push_back(j.value("event", "") + ":" + status);
    if (j["data"].contains("progress") && progress != nullptr) {
      progress->push_back(j["data"]["progress"]);
    }
    if (status == last) {
      break;
    }
  }
  return seen;
}

TEST_F(LlamaCppRouterApiTest, HealthAtTheRootAnswersAsLlamaServers) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto r = http_get(port(), "/health");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json(), (nlohmann::json{{"status", "ok"}}));
}

TEST_F(LlamaCppRouterApiTest, StatusGoesUnloadedLoadingLoadedUnloadedOnModelsAndSse) {
  // Loading lasts long enough to be seen; progress is reported meanwhile.
  env_.write_sidecar(env_.add_llm("a"), {{"startup_delay_ms", 1500}, {"load_progress_steps", 3}});
  ASSERT_NO_FATAL_FAILURE(start_router());

  auto listed = models_entry(port(), "a");
  ASSERT_TRUE(listed.is_object()) << http_get(port(), "/models").body;
  EXPECT_EQ(listed["status"]["value"], "unloaded");
  EXPECT_EQ(listed["object"], "model");
  EXPECT_EQ(listed["owned_by"], "llamacpp");
  EXPECT_EQ(listed["source"], "models_dir") << "a user model from a file on disk";
  EXPECT_EQ(listed["can_remove"], false);
  EXPECT_TRUE(listed["aliases"].is_array());
  EXPECT_TRUE(listed["status"]["args"].is_array());
  EXPECT_EQ(listed["architecture"]["output_modalities"], nlohmann::json::array({"text"}));

  SseStream sse(port(), "GET", "/models/sse", "", {});
  ASSERT_TRUE(sse.read_head());
  ASSERT_EQ(sse.status(), 200);
  EXPECT_EQ(sse.header("content-type"), "text/event-stream");

  auto loaded = http_post(port(), "/models/load", nlohmann::json{{"model", "a"}});
  ASSERT_EQ(loaded.status, 200) << loaded.body;
  EXPECT_EQ(loaded.json(), (nlohmann::json{{"success", true}}));
  // The answer comes once the load is queued: the model shows loading, and
  // a second load is refused as llama.cpp refuses it.
  EXPECT_EQ(status_of(port(), "a"), "loading");
  auto again = http_post(port(), "/models/load", nlohmann::json{{"model", "a"}});
  expect_error(again, 400, "invalid_request_error", "model", "a second load while loading");

  ASSERT_TRUE(eventually([&] { return status_of(port(), "a") == "loaded"; }));
  auto running = models_entry(port(), "a");
  EXPECT_TRUE(running.contains("meta")) << running.dump();
  // /v1/models keeps Lemonade's shape and gains llama.cpp's fields.
  auto openai = http_get(port(), "/v1/models");
  ASSERT_EQ(openai.status, 200) << openai.body;
  bool annotated = false;
  const nlohmann::json listing = openai.json();
  for (const auto& e : listing["data"]) {
    if (e.value("id", "") == "a") {
      annotated = e.contains("recipe") && e["status"]["value"] == "loaded" &&
                  e["source"] == "models_dir" && e["architecture"].is_object();
    }
  }
  EXPECT_TRUE(annotated) << openai.body;
  auto third = http_post(port(), "/models/load", nlohmann::json{{"model", "a"}});
  expect_error(third, 400, "invalid_request_error", "model", "a load of a loaded model");

  auto unloaded = http_post(port(), "/models/unload", nlohmann::json{{"model", "a"}});
  ASSERT_EQ(unloaded.status, 200) << unloaded.body;
  EXPECT_EQ(unloaded.json(), (nlohmann::json{{"success", true}}));
  ASSERT_TRUE(eventually([&] { return status_of(port(), "a") == "unloaded"; }));

  std::vector<nlohmann::json> progress;
  auto seen = sse_statuses_until(sse, "a", "unloaded", &progress);
  ASSERT_GE(seen.size(), 3U);
  EXPECT_EQ(seen.front(), "model_status:loading");
  EXPECT_EQ(seen[seen.size() - 2], "status_change:loaded");
  EXPECT_EQ(seen.back(), "status_change:unloaded");
  for (std::size_t i = 1; i + 2 < seen.size(); ++i) {
    EXPECT_EQ(seen[i], "status_change:loading") << "event " << i;
  }
  ASSERT_FALSE(progress.empty()) << "no load progress on /models/sse";
  EXPECT_EQ(progress.front()["current"], "text_model") << progress.front().dump();
  EXPECT_EQ(progress.front()["stages"][0], "text_model") << progress.front().dump();
}

TEST_F(LlamaCppRouterApiTest, LoadAndUnloadOfUnknownOrIdleModelsAreErrors) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto unknown = http_post(port(), "/models/load", nlohmann::json{{"model", "nope"}});
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_TRUE(is_error_envelope(unknown.json())) << unknown.body;
  auto missing = http_post(port(), "/models/load", nlohmann::json::object());
  EXPECT_EQ(missing.status, 400) << missing.body;
  auto idle = http_post(port(), "/models/unload", nlohmann::json{{"model", "a"}});
  EXPECT_GE(idle.status, 400) << idle.body;
  EXPECT_TRUE(is_error_envelope(idle.json())) << idle.body;
  expect_nothing_loaded();
}

TEST_F(LlamaCppRouterApiTest, PropsWithoutAModelAreTheRoutersAndWithOneTheBackends) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto router_props = http_get(port(), "/props");
  ASSERT_EQ(router_props.status, 200) << router_props.body;
  EXPECT_EQ(router_props.json()["role"], "router");
  EXPECT_EQ(router_props.json()["models_autoload"], true);
  EXPECT_TRUE(router_props.json().contains("max_instances"));
  EXPECT_TRUE(router_props.json()["build_info"].is_string());

  // Autoload off: the unloaded model's props are an error, and nothing loads.
  auto refused = http_get(port(), "/props?model=a&autoload=false");
  EXPECT_EQ(refused.status, 404) << refused.body;
  EXPECT_EQ(refused.json()["error"]["code"], "model_not_loaded") << refused.body;
  expect_nothing_loaded();

  auto model_props = http_get(port(), "/props?model=a");
  ASSERT_EQ(model_props.status, 200) << model_props.body;
  EXPECT_FALSE(model_props.json().contains("role")) << model_props.body;
  EXPECT_TRUE(model_props.json().contains("default_generation_settings")) << model_props.body;
  EXPECT_EQ(status_of(port(), "a"), "loaded");
  auto slots = http_get(port(), "/slots?model=a");
  ASSERT_EQ(slots.status, 200) << slots.body;
  EXPECT_TRUE(slots.json().is_array()) << slots.body;
  auto no_model = http_get(port(), "/slots");
  EXPECT_EQ(no_model.status, 400) << no_model.body;
}

TEST_F(LlamaCppRouterApiTest, RootInferenceRoutesTakeTheModelFromTheBody) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto r = http_post(port(), "/chat/completions", chat_body("a"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(r.json().contains("choices")) << r.body;
  auto tok = http_post(port(), "/tokenize", nlohmann::json{{"model", "a"}, {"content", "hi"}});
  EXPECT_EQ(tok.status, 200) << tok.body;
  auto no_model = http_post(port(), "/completion", nlohmann::json{{"prompt", "hi"}});
  EXPECT_EQ(no_model.status, 400) << no_model.body;
  EXPECT_TRUE(is_error_envelope(no_model.json())) << no_model.body;
}

TEST_F(LlamaCppRouterApiTest, AutoloadFalseRefusesAnUnloadedModelAndTrueLoadsIt) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto refused = http_post(port(), "/v1/chat/completions?autoload=false", chat_body("a"));
  EXPECT_EQ(refused.status, 404) << refused.body;
  EXPECT_EQ(refused.json()["error"]["code"], "model_not_loaded") << refused.body;
  expect_nothing_loaded();
  auto loaded = http_post(port(), "/v1/chat/completions?autoload=true", chat_body("a"));
  EXPECT_EQ(loaded.status, 200) << loaded.body;
  // Once loaded, autoload=false serves it.
  auto served = http_post(port(), "/chat/completions?autoload=false", chat_body("a"));
  EXPECT_EQ(served.status, 200) << served.body;
}

TEST_F(LlamaCppRouterApiTest, NoModelsAutoloadMakesAnUnloadedModelAnErrorUnlessAskedFor) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--no-models-autoload"}));
  EXPECT_EQ(http_get(port(), "/props").json()["models_autoload"], false);
  auto refused = http_post(port(), "/chat/completions", chat_body("a"));
  EXPECT_EQ(refused.status, 404) << refused.body;
  EXPECT_EQ(refused.json()["error"]["code"], "model_not_loaded") << refused.body;
  expect_nothing_loaded();
  auto asked = http_post(port(), "/chat/completions?autoload=true", chat_body("a"));
  EXPECT_EQ(asked.status, 200) << asked.body;
}

// --models-preset: each section of llama-server's preset file is a preset
// of ours, listed by its section name with source "preset", and served.
TEST_F(LlamaCppRouterApiTest, APresetFilesSectionsAreModelsOfTheirOwn) {
  const std::string file = env_.add_llm("a");
  const std::string ini = env_.root() + "/models.ini";
  write_file_atomically(
      ini, "version = 1\n[*]\nc = 2048\n\n[short-a]\nmodel = " + file + "\ntags = small\n");
  ASSERT_NO_FATAL_FAILURE(start_router({"--models-preset", ini}));
  auto listed = models_entry(port(), "short-a");
  ASSERT_TRUE(listed.is_object()) << http_get(port(), "/models").body;
  EXPECT_EQ(listed["source"], "preset");
  EXPECT_EQ(listed["tags"], nlohmann::json::array({"small"}));
  EXPECT_EQ(listed["status"]["value"], "unloaded");
  auto presets = http_get(port(), "/api/v1/presets");
  EXPECT_NE(presets.body.find("short-a"), std::string::npos) << presets.body;
  auto r = http_post(port(), "/chat/completions", chat_body("short-a"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(status_of(port(), "short-a"), "loaded");
  EXPECT_EQ(router().count_log("--ctx-size 2048"), 1) << router().log_text();
}

TEST_F(LlamaCppRouterApiTest, ABrokenPresetFileStopsTheStartNamingItsLine) {
  const std::string ini = env_.root() + "/models.ini";
  write_file_atomically(ini, "[m]\nno-such-option = 1\n");
  auto& r = launch_router({"--port", "0", "--models-preset", ini});
  auto exit = r.wait_exit();
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->exited && exit->code != 0);
  EXPECT_GE(r.count_log("models.ini:2:"), 1) << r.log_text();
}

}  // namespace
}  // namespace lemon::testing
