// Presets (issue #14 §1) against the real router and the fake llama-server:
// presets that differ only in request-time settings share one server and
// the backend receives the filled values; a different ctx_size is its own
// server; the CRUD routes and their persistence across a restart; 404s and
// 400s naming the field; a broken user file stops nothing; /load {"preset"}.
#include <fstream>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

class PresetsTest : public RouterTest {
 protected:
  void SetUp() override { env_.add_llm("a"); }

  void write_presets(const std::string& text) {
    write_file_atomically(env_.cache_dir() + "/presets.json", text);
  }
  HttpReply put(const std::string& id, const json& body) {
    return http_request(port(), "PUT", "/api/v1/presets/" + id, body.dump());
  }
  HttpReply del(const std::string& id) {
    return http_request(port(), "DELETE", "/api/v1/presets/" + id);
  }
  json last_request(const std::string& server) {
    return fake_state(loaded_field(health(port()), server, "backend_url"))["last_request"];
  }
  static void expect_error(const HttpReply& r, int status, const std::string& param) {
    EXPECT_EQ(r.status, status) << r.body;
    auto j = r.json();
    EXPECT_TRUE(is_error_envelope(j)) << r.body;
    if (!param.empty()) {
      EXPECT_EQ(j["error"]["param"], param) << r.body;
    }
  }
};

TEST_F(PresetsTest, SamplingOnlyPresetsShareOneServerAndFillTheRequest) {
  write_presets(json({{"precise",
                       {{"model", "user.a"},
                        {"reasoning_format", "none"},
                        {"chat_template_kwargs", {{"enable_thinking", false}}},
                        {"sampling", {{"temperature", 0.1}, {"top_k", 5}}}}},
                      {"creative",
                       {{"model", "user.a"},
                        {"sampling", {{"temperature", 1.3}, {"top_p", 0.9}, {"min_p", 0.05}}}}}})
                    .dump());
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(chat(port(), "preset.precise").status, 200);
  const int pid = loaded_pid(port(), "user.a");
  ASSERT_GT(pid, 0);
  json sent = last_request("user.a");
  EXPECT_EQ(sent["temperature"], 0.1) << sent.dump();
  EXPECT_EQ(sent["top_k"], 5);
  EXPECT_EQ(sent["reasoning_format"], "none");
  EXPECT_EQ(sent["chat_template_kwargs"], json({{"enable_thinking", false}}));

  // The request's own values win; kwargs merge key by key.
  ASSERT_EQ(
      chat(port(), "preset.creative", {{"temperature", 0.5}, {"chat_template_kwargs", {{"x", 1}}}})
          .status,
      200);
  sent = last_request("user.a");
  EXPECT_EQ(sent["temperature"], 0.5);
  EXPECT_EQ(sent["top_p"], 0.9);
  EXPECT_EQ(sent["min_p"], 0.05);
  EXPECT_FALSE(sent.contains("top_k")) << "precise's values stay with precise: " << sent.dump();
  EXPECT_EQ(sent["chat_template_kwargs"], json({{"x", 1}}));

  // The plain model and both presets: one server, never reloaded.
  ASSERT_EQ(chat(port(), "user.a").status, 200);
  auto h = health(port());
  EXPECT_EQ(loaded_names(h), (Names{"user.a"}));
  EXPECT_EQ(loaded_field(h, "user.a", "pid"), pid);
  EXPECT_EQ(fake_state(loaded_field(h, "user.a", "backend_url"))["requests"], 3);
  EXPECT_EQ(router().count_log("starting "), 1);
  auto listed = http_get(port(), "/api/v1/presets/precise").json();
  EXPECT_EQ(listed["server"], "user.a");
  EXPECT_EQ(listed["loaded"], true);
}

// `strip` removes a field, `set` forces one, the fill applies after both;
// an id "a:strict" is asked for as the model "a:strict", shares user.a's
// server and counts what it enforced in the metrics.
TEST_F(PresetsTest, SetAndStripAreEnforcedAndAVariantIdSharesTheServer) {
  write_presets(json({{"a:strict",
                       {{"model", "user.a"},
                        {"set", {{"temperature", 0.2}, {"max_tokens", 64}}},
                        {"strip", {"logit_bias", "seed", "top_k"}},
                        {"sampling", {{"top_k", 7}}}}}})
                    .dump());
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(chat(port(), "user.a").status, 200);
  const int pid = loaded_pid(port(), "user.a");
  ASSERT_GT(pid, 0);
  ASSERT_EQ(chat(port(), "a:strict",
                 {{"temperature", 1.5}, {"seed", 3}, {"logit_bias", {{"5", 1}}}, {"top_k", 90}})
                .status,
            200);
  json sent = last_request("user.a");
  EXPECT_EQ(sent["temperature"], 0.2) << sent.dump();
  EXPECT_EQ(sent["max_tokens"], 64) << "a set field the client left out is added";
  EXPECT_FALSE(sent.contains("seed")) << sent.dump();
  EXPECT_FALSE(sent.contains("logit_bias")) << sent.dump();
  EXPECT_EQ(sent["top_k"], 7) << "stripped, then filled with the preset's own value";
  EXPECT_EQ(loaded_field(health(port()), "user.a", "pid"), pid) << "no reload for a variant";

  // The same request by its preset name; the client's value of a field the
  // preset does not touch passes.
  ASSERT_EQ(chat(port(), "preset.a:strict", {{"temperature", 0.9}, {"top_p", 0.5}}).status, 200);
  sent = last_request("user.a");
  EXPECT_EQ(sent["temperature"], 0.2);
  EXPECT_EQ(sent["top_p"], 0.5);

  const std::string metrics = http_get(port(), "/metrics").body;
  EXPECT_NE(
      metrics.find(R"(lemonade_preset_enforced_fields_total{preset="a:strict",action="set"} 2)"),
      std::string::npos)
      << metrics;
  EXPECT_NE(
      metrics.find(R"(lemonade_preset_enforced_fields_total{preset="a:strict",action="strip"} 3)"),
      std::string::npos)
      << metrics;
  auto listed = http_get(port(), "/api/v1/presets/a:strict").json();
  EXPECT_EQ(listed["set"], json({{"max_tokens", 64}, {"temperature", 0.2}})) << listed.dump();
  EXPECT_EQ(listed["strip"], json({"logit_bias", "seed", "top_k"})) << listed.dump();

  // A name with a colon and no such preset is still the model's own name.
  ASSERT_EQ(chat(port(), "user.a:latest").status, 200);
  // A preset may not force the request's own fields.
  auto bad = put("x", {{"model", "user.a"}, {"set", {{"messages", json::array()}}}});
  expect_error(bad, 400, "set.messages");
  bad = put("x", {{"model", "user.a"}, {"strip", "seed"}});
  expect_error(bad, 400, "strip");
}

TEST_F(PresetsTest, ADifferentContextSizeIsItsOwnServer) {
  write_presets(
      json({{"big", {{"model", "user.a"}, {"ctx_size", 8192}}},
            {"big-hot",
             {{"model", "user.a"}, {"ctx_size", 8192}, {"sampling", {{"temperature", 1.5}}}}}})
          .dump());
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "2"}));
  const std::string server = http_get(port(), "/api/v1/presets/big").json()["server"];
  ASSERT_TRUE(server.starts_with("user.a~")) << server;
  EXPECT_EQ(http_get(port(), "/api/v1/presets/big-hot").json()["server"], server);

  ASSERT_EQ(chat(port(), "user.a").status, 200);
  ASSERT_EQ(chat(port(), "preset.big").status, 200);
  ASSERT_EQ(chat(port(), "preset.big-hot").status, 200);
  auto h = health(port());
  EXPECT_EQ(loaded_names(h), (Names{"user.a", server}));
  EXPECT_EQ(loaded_field(h, server, "recipe_options")["ctx_size"], 8192);
  EXPECT_EQ(loaded_field(h, "user.a", "recipe_options")["ctx_size"], 4096);
  EXPECT_NE(loaded_field(h, server, "pid"), loaded_field(h, "user.a", "pid"));
  EXPECT_EQ(fake_state(loaded_field(h, server, "backend_url"))["requests"], 2);
  EXPECT_EQ(last_request(server)["temperature"], 1.5);
  EXPECT_EQ(router().count_log("starting "), 2);
}

TEST_F(PresetsTest, CrudRoundTripPersistsAcrossARestart) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto listed = http_get(port(), "/api/v1/presets");
  ASSERT_EQ(listed.status, 200) << listed.body;
  const json listing = listed.json();  // held: the loop reads one of its members
  const std::size_t builtins = listing["data"].size();
  EXPECT_GE(builtins, 3u);
  for (const auto& p : listing["data"]) {
    EXPECT_EQ(p["source"], "builtin") << p.dump();
  }

  json body = {{"id", "mine"}, {"model", "user.a"}, {"sampling", {{"temperature", 0.4}}}};
  auto created = http_post(port(), "/api/v1/presets", body);
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.json()["source"], "user");
  EXPECT_EQ(created.json()["server"], "user.a");
  expect_error(http_post(port(), "/api/v1/presets", body), 409, "id");
  expect_error(http_post(port(), "/v1/presets", json{{"id", "qwen3-coder"}, {"model", "user.a"}}),
               409, "id");

  // PUT takes GET's answer back with a change.
  json changed = http_get(port(), "/api/v1/presets/mine").json();
  changed["ctx_size"] = 2048;
  auto replaced = put("mine", changed);
  ASSERT_EQ(replaced.status, 200) << replaced.body;
  EXPECT_NE(replaced.json()["server"], "user.a");
  EXPECT_EQ(replaced.json()["ctx_size"], 2048);
  expect_error(put("qwen3-coder", {{"model", "user.a"}}), 409, "id");
  expect_error(del("qwen3-coder"), 409, "id");

  router_->kill_and_reap();
  router_.reset();
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto after = http_get(port(), "/v0/presets/mine");
  ASSERT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(after.json()["ctx_size"], 2048);
  EXPECT_EQ(after.json()["sampling"]["temperature"], 0.4);
  EXPECT_EQ(http_get(port(), "/api/v1/presets").json()["data"].size(), builtins + 1);

  auto deleted = del("mine");
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(deleted.json()["deleted"], true);
  expect_error(http_get(port(), "/api/v1/presets/mine"), 404, "preset");
  EXPECT_EQ(http_get(port(), "/api/v1/presets").json()["data"].size(), builtins);
}

TEST_F(PresetsTest, UnknownPresetsAre404AndInvalidFields400) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto r = chat(port(), "preset.nope");
  expect_error(r, 404, "model");
  EXPECT_EQ(r.json()["error"]["code"], "model_not_found") << r.body;
  expect_error(http_get(port(), "/api/v1/presets/nope"), 404, "preset");
  expect_error(put("nope", {{"model", "user.a"}}), 404, "preset");
  expect_error(del("nope"), 404, "preset");
  expect_error(http_post(port(), "/api/v1/load", json{{"preset", "nope"}}), 404, "preset");

  expect_error(http_post(port(), "/api/v1/presets",
                         json{{"id", "x"}, {"model", "user.a"}, {"sampling", {{"top_p", 3}}}}),
               400, "sampling.top_p");
  expect_error(
      http_post(port(), "/api/v1/presets", json{{"id", "x"}, {"model", "user.a"}, {"ctx", 1}}), 400,
      "ctx");
  expect_error(http_post(port(), "/api/v1/presets",
                         json{{"id", "x"}, {"model", "user.a"}, {"ctx_size", -5}}),
               400, "ctx_size");
  expect_error(http_post(port(), "/api/v1/presets", json{{"id", "x"}, {"model", "user.zzz"}}), 400,
               "model");
  expect_error(http_post(port(), "/api/v1/presets", json{{"id", "a b"}, {"model", "user.a"}}), 400,
               "id");
  expect_error(http_post(port(), "/api/v1/presets", json{{"model", "user.a"}}), 400, "id");
  EXPECT_EQ(router().count_log("starting "), 0);
}

TEST_F(PresetsTest, ABrokenUserFileStopsNothing) {
  write_presets(
      "{\"good\": {\"model\": \"user.a\"}, \"bad\": {\"model\": \"user.a\", "
      "\"reasoning_format\": \"sometimes\"}}");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(chat(port(), "preset.good").status, 200);
  auto info = http_get(port(), "/api/v1/system-info").json()["presets"];
  EXPECT_EQ(info["user"], 1) << info.dump();
  ASSERT_EQ(info["errors"].size(), 1u) << info.dump();
  EXPECT_NE(info["errors"][0].get<std::string>().find("reasoning_format"), std::string::npos);

  write_presets("{\"good\": ");
  info = http_get(port(), "/api/v1/system-info").json()["presets"];
  EXPECT_EQ(info["user"], 0) << info.dump();
  EXPECT_GE(info["builtin"], 3);
  ASSERT_EQ(info["errors"].size(), 1u) << info.dump();
  EXPECT_NE(info["errors"][0].get<std::string>().find("presets.json: is not valid JSON"),
            std::string::npos)
      << info.dump();
  EXPECT_EQ(http_get(port(), "/api/v1/presets/qwen3-coder").status, 200);
  expect_error(chat(port(), "preset.good"), 404, "model");
  // A write is refused rather than replace the user's broken file.
  auto created = http_post(port(), "/api/v1/presets", json{{"id", "n"}, {"model", "user.a"}});
  RouterTest::expect_error(created, 409, "config_file_invalid", "", "a broken presets.json");
  std::ifstream in(env_.cache_dir() + "/presets.json");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()),
            "{\"good\": ");
}

TEST_F(PresetsTest, LoadTakesAPreset) {
  write_presets(json({{"big", {{"model", "user.a"}, {"ctx_size", 6000}}}}).dump());
  ASSERT_NO_FATAL_FAILURE(start_router());
  expect_error(http_post(port(), "/api/v1/load", json{{"preset", "big"}, {"model_name", "user.a"}}),
               400, "preset");
  expect_error(http_post(port(), "/api/v1/load", json{{"preset", "big"}, {"ctx_size", 10}}), 400,
               "ctx_size");
  auto r = http_post(port(), "/api/v1/load", json{{"preset", "big"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string server = r.json()["model_name"];
  EXPECT_TRUE(server.starts_with("user.a~")) << server;
  auto h = health(port());
  EXPECT_EQ(loaded_names(h), (Names{server}));
  EXPECT_EQ(loaded_field(h, server, "recipe_options")["ctx_size"], 6000);
  // A request through the preset uses the loaded server.
  ASSERT_EQ(chat(port(), "preset.big").status, 200);
  EXPECT_EQ(router().count_log("starting "), 1);
}

}  // namespace
}  // namespace lemon::testing
