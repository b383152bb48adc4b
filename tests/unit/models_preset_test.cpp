// Presets (issue #14 §1): parsing and validation of a presets file entry,
// the server-name rule (load-time settings decide the server, request-time
// ones do not), filling a preset's defaults into recorded request bodies,
// and the PresetCatalogue over a real ModelCatalogue (resolve, a broken
// user file, writes).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "lemon/models/catalogue.h"
#include "lemon/models/preset.h"
#include "lemon/models/preset_catalogue.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kResources = LEMON_RESOURCES_DIR;

Preset parsed(const json& entry, const std::string& id = "p") {
  auto p = parse_preset(id, entry);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message());
  return p.ok() ? std::move(p).value() : Preset{};
}

TEST(Preset, AFullEntryParsesAndRoundTrips) {
  json entry = {{"name", "Coder"},
                {"description", "d"},
                {"model", "Qwen3-4B-GGUF"},
                {"ctx_size", 32768},
                {"llamacpp_args", "--no-mmap"},
                {"reasoning_format", "deepseek"},
                {"chat_template_kwargs", {{"enable_thinking", false}}},
                {"sampling",
                 {{"temperature", 0.7},
                  {"top_p", 0.8},
                  {"top_k", 20},
                  {"min_p", 0.0},
                  {"repeat_penalty", 1.05}}}};
  Preset p = parsed(entry, "coder");
  EXPECT_EQ(p.id, "coder");
  EXPECT_EQ(p.load_options.ctx_size(), 32768);
  EXPECT_EQ(p.load_options.string_value("llamacpp_args"), "--no-mmap");
  EXPECT_EQ(p.reasoning_format, "deepseek");
  EXPECT_EQ(p.sampling["top_k"], 20);
  EXPECT_EQ(json(p.to_json()), entry);
  EXPECT_EQ(parsed(json(p.to_json()), "coder").server_name(), p.server_name());
}

TEST(Preset, EachInvalidFieldIsNamed) {
  const json base = {{"model", "Qwen3-4B-GGUF"}};
  struct Case {
    json change;
    std::string param;
  };
  const Case cases[] = {
      {{{"colour", "red"}}, "colour"},
      {{{"name", 3}}, "name"},
      {{{"description", false}}, "description"},
      {{{"model", ""}}, "model"},
      {{{"model", 7}}, "model"},
      {{{"model", "/abs/not-a-gguf.bin"}}, "model"},
      {{{"model", "owner/"}}, "model"},
      {{{"model", "a/b/c"}}, "model"},
      {{{"ctx_size", 0}}, "ctx_size"},
      {{{"ctx_size", "big"}}, "ctx_size"},
      {{{"llamacpp_backend", "nosuch"}}, "llamacpp_backend"},
      {{{"llamacpp_args", 5}}, "llamacpp_args"},
      {{{"reasoning_format", "always"}}, "reasoning_format"},
      {{{"chat_template_kwargs", "x"}}, "chat_template_kwargs"},
      {{{"sampling", 1}}, "sampling"},
      {{{"sampling", {{"temperature", -0.1}}}}, "sampling.temperature"},
      {{{"sampling", {{"temperature", "hot"}}}}, "sampling.temperature"},
      {{{"sampling", {{"top_p", 1.5}}}}, "sampling.top_p"},
      {{{"sampling", {{"min_p", -1}}}}, "sampling.min_p"},
      {{{"sampling", {{"top_k", 2.5}}}}, "sampling.top_k"},
      {{{"sampling", {{"top_k", -1}}}}, "sampling.top_k"},
      {{{"sampling", {{"repeat_penalty", -1}}}}, "sampling.repeat_penalty"},
      {{{"sampling", {{"seed", 1}}}}, "sampling.seed"},
  };
  for (const auto& c : cases) {
    json entry = base;
    entry.update(c.change);
    auto p = parse_preset("p", entry);
    ASSERT_FALSE(p.ok()) << entry.dump();
    EXPECT_EQ(p.error().code(), ErrorCode::kInvalidRequest) << entry.dump();
    EXPECT_EQ(p.error().param(), c.param) << entry.dump() << ": " << p.error().message();
  }
  auto missing = parse_preset("p", json{{"name", "no model"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().param(), "model");
  auto not_object = parse_preset("p", json::array());
  ASSERT_FALSE(not_object.ok());
  EXPECT_EQ(not_object.error().code(), ErrorCode::kInvalidRequest);
}

TEST(Preset, IdsAreShortAndPlain) {
  EXPECT_TRUE(valid_preset_id("a"));
  EXPECT_TRUE(valid_preset_id("qwen3-coder_v1.2"));
  EXPECT_TRUE(valid_preset_id(std::string(64, 'x')));
  EXPECT_FALSE(valid_preset_id(""));
  EXPECT_FALSE(valid_preset_id(std::string(65, 'x')));
  EXPECT_FALSE(valid_preset_id("a b"));
  EXPECT_FALSE(valid_preset_id("a/b"));
  // The NAME:VARIANT form: one colon between two non-empty parts.
  EXPECT_TRUE(valid_preset_id("qwen:high"));
  EXPECT_FALSE(valid_preset_id(":high"));
  EXPECT_FALSE(valid_preset_id("qwen:"));
  EXPECT_FALSE(valid_preset_id("a:b:c"));
  auto bad = parse_preset("a/b", json{{"model", "Qwen3-4B-GGUF"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().param(), "id");
}

TEST(Preset, SetAndStripParseRoundTripAndRefuseTheRequestsOwnFields) {
  const Preset p = parsed({{"model", "Qwen3-4B-GGUF"},
                           {"set", {{"temperature", 0.2}, {"max_tokens", 64}}},
                           {"strip", {"seed", "logit_bias", "seed"}}});
  EXPECT_EQ(p.set, json({{"temperature", 0.2}, {"max_tokens", 64}}));
  EXPECT_EQ(p.strip, (std::vector<std::string>{"seed", "logit_bias"})) << "duplicates dropped";
  EXPECT_EQ(json(p.to_json())["strip"], json({"seed", "logit_bias"}));
  EXPECT_EQ(parsed(json(p.to_json())).set, p.set);
  EXPECT_FALSE(p.has_load_overrides()) << "request-time only: the model's own server";

  struct Bad {
    json entry;
    std::string param;
  };
  const std::vector<Bad> bad = {
      {{{"set", {{"model", "x"}}}}, "set.model"},
      {{{"set", {{"messages", json::array()}}}}, "set.messages"},
      {{{"set", {{"temperature", -1}}}}, "set.temperature"},
      {{{"set", {{"seed", nullptr}}}}, "set.seed"},
      {{{"set", json::array()}}, "set"},
      {{{"strip", "seed"}}, "strip"},
      {{{"strip", {1}}}, "strip"},
      {{{"strip", {"stream"}}}, "strip"},
  };
  for (const auto& c : bad) {
    json entry = c.entry;
    entry["model"] = "Qwen3-4B-GGUF";
    auto parsed_bad = parse_preset("p", entry);
    ASSERT_FALSE(parsed_bad.ok()) << entry.dump();
    EXPECT_EQ(parsed_bad.error().param(), c.param) << entry.dump();
  }
}

TEST(Preset, StripThenSetThenFill) {
  const Preset p = parsed({{"model", "Qwen3-4B-GGUF"},
                           {"set", {{"temperature", 0.2}, {"max_tokens", 64}}},
                           {"strip", {"seed", "top_k"}},
                           {"sampling", {{"top_k", 7}, {"top_p", 0.8}}}});
  json body = {{"messages", json::array()},
               {"temperature", 1.5},
               {"max_tokens", 64},
               {"seed", 3},
               {"top_k", 90},
               {"top_p", 0.3}};
  bool changed = false;
  PresetEnforced done = enforce_preset(p, body, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(done.overridden, 1) << "max_tokens already had the preset's value";
  EXPECT_EQ(done.stripped, 2);
  EXPECT_TRUE(apply_preset_defaults(p, body));
  EXPECT_EQ(body, json({{"messages", json::array()},
                        {"temperature", 0.2},
                        {"max_tokens", 64},
                        {"top_k", 7},
                        {"top_p", 0.3}}));
  // Nothing to enforce: untouched and not counted.
  json plain = {{"messages", json::array()}, {"temperature", 0.2}, {"max_tokens", 64}};
  done = enforce_preset(p, plain, &changed);
  EXPECT_FALSE(changed);
  EXPECT_FALSE(done.changed());
  // A set field the client left out is added, not counted as overridden.
  json bare = {{"messages", json::array()}};
  done = enforce_preset(p, bare, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(done.overridden, 0);
  EXPECT_EQ(bare["temperature"], 0.2);
}

TEST(Preset, RequestTimeSettingsShareTheServerLoadTimeSettingsDoNot) {
  const Preset plain = parsed({{"model", "Qwen3-4B-GGUF"}});
  const Preset precise = parsed({{"model", "Qwen3-4B-GGUF"},
                                 {"reasoning_format", "none"},
                                 {"chat_template_kwargs", {{"enable_thinking", false}}},
                                 {"sampling", {{"temperature", 0.1}}}});
  const Preset creative =
      parsed({{"model", "Qwen3-4B-GGUF"}, {"sampling", {{"temperature", 1.2}, {"top_k", 80}}}});
  // No load-time override: the base model's own server.
  EXPECT_EQ(plain.server_name(), "Qwen3-4B-GGUF");
  EXPECT_EQ(precise.server_name(), "Qwen3-4B-GGUF");
  EXPECT_EQ(creative.server_name(), "Qwen3-4B-GGUF");

  const Preset big = parsed({{"model", "Qwen3-4B-GGUF"}, {"ctx_size", 32768}});
  const Preset big_too = parsed(
      {{"model", "Qwen3-4B-GGUF"}, {"ctx_size", 32768}, {"sampling", {{"temperature", 0.3}}}});
  const Preset bigger = parsed({{"model", "Qwen3-4B-GGUF"}, {"ctx_size", 65536}});
  const Preset args =
      parsed({{"model", "Qwen3-4B-GGUF"}, {"ctx_size", 32768}, {"llamacpp_args", "--no-mmap"}});
  const Preset other = parsed({{"model", "Qwen3-8B-GGUF"}, {"ctx_size", 32768}});
  EXPECT_TRUE(big.server_name().starts_with("Qwen3-4B-GGUF~")) << big.server_name();
  EXPECT_EQ(big.server_name().size(), std::string("Qwen3-4B-GGUF~").size() + 8);
  EXPECT_EQ(big.server_name(), big_too.server_name());
  EXPECT_NE(big.server_name(), bigger.server_name());
  EXPECT_NE(big.server_name(), args.server_name());
  EXPECT_NE(big.server_name(), plain.server_name());
  EXPECT_TRUE(other.server_name().starts_with("Qwen3-8B-GGUF~"));

  // Checkpoints and paths have no plain server: always a hashed name.
  const Preset hub = parsed({{"model", "unsloth/Qwen3-0.6B-GGUF:Q4_0"}});
  EXPECT_EQ(hub.model_kind(), PresetModelKind::kCheckpoint);
  EXPECT_TRUE(hub.server_name().starts_with("unsloth/Qwen3-0.6B-GGUF:Q4_0~"));
  const Preset file = parsed({{"model", "/models/tiny.gguf"}});
  EXPECT_EQ(file.model_kind(), PresetModelKind::kLocalPath);
  EXPECT_TRUE(file.server_name().starts_with("tiny.gguf~"));
  EXPECT_EQ(parsed({{"model", "user.a"}}).model_kind(), PresetModelKind::kCatalogue);
}

// Bodies as clients sent them (recorded), and what the backend must get.
TEST(Preset, DefaultsFillOnlyWhatTheRequestLeavesOut) {
  const Preset p = parsed({{"model", "Qwen3-4B-GGUF"},
                           {"reasoning_format", "deepseek"},
                           {"chat_template_kwargs", {{"enable_thinking", false}, {"x", 1}}},
                           {"sampling", {{"temperature", 0.7}, {"top_k", 20}, {"top_p", 0.8}}}});
  struct Pair {
    json request;
    json forwarded;
    bool changed;
  };
  const json hi = json::array({{{"role", "user"}, {"content", "hi"}}});
  const Pair pairs[] = {
      // Nothing set: every default.
      {{{"model", "preset.p"}, {"messages", hi}},
       {{"model", "preset.p"},
        {"messages", hi},
        {"temperature", 0.7},
        {"top_k", 20},
        {"top_p", 0.8},
        {"reasoning_format", "deepseek"},
        {"chat_template_kwargs", {{"enable_thinking", false}, {"x", 1}}}},
       true},
      // The request's own values win, kwargs merged key by key.
      {{{"model", "preset.p"},
        {"messages", hi},
        {"temperature", 0},
        {"reasoning_format", "none"},
        {"chat_template_kwargs", {{"enable_thinking", true}}}},
       {{"model", "preset.p"},
        {"messages", hi},
        {"temperature", 0},
        {"top_k", 20},
        {"top_p", 0.8},
        {"reasoning_format", "none"},
        {"chat_template_kwargs", {{"enable_thinking", true}, {"x", 1}}}},
       true},
      // Everything set: unchanged.
      {{{"prompt", "x"},
        {"temperature", 1},
        {"top_k", 1},
        {"top_p", 1},
        {"reasoning_format", "auto"},
        {"chat_template_kwargs", {{"enable_thinking", true}, {"x", 2}}}},
       {{"prompt", "x"},
        {"temperature", 1},
        {"top_k", 1},
        {"top_p", 1},
        {"reasoning_format", "auto"},
        {"chat_template_kwargs", {{"enable_thinking", true}, {"x", 2}}}},
       false},
  };
  for (const auto& pair : pairs) {
    json body = pair.request;
    EXPECT_EQ(apply_preset_defaults(p, body), pair.changed) << pair.request.dump();
    EXPECT_EQ(body, pair.forwarded) << pair.request.dump();
  }
  // A preset with no request-time values changes nothing.
  json body = {{"model", "x"}};
  EXPECT_FALSE(apply_preset_defaults(parsed({{"model", "Qwen3-4B-GGUF"}}), body));
  EXPECT_EQ(body, json({{"model", "x"}}));
}

class PresetCatalogueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CatalogueSources s;
    s.server_models_json = kResources + "/server_models.json";
    s.cache_dir = (t_.path() / "cache").string();
    s.hf_hub_cache = (t_.path() / "hub").string();
    s.flm_installed = [] { return std::vector<std::string>{}; };
    auto cat = ModelCatalogue::open(s);
    ASSERT_TRUE(cat.ok());
    models_ = std::move(cat).value();
  }
  std::unique_ptr<PresetCatalogue> open(const std::string& builtin = kResources + "/presets.json") {
    PresetSources s;
    s.builtin_json = builtin;
    s.cache_dir = (t_.path() / "cache").string();
    s.hf_hub_cache = (t_.path() / "hub").string();
    return std::make_unique<PresetCatalogue>(*models_, s);
  }
  // Writes the user's presets.json with an explicit mtime, so a rewrite is
  // seen as a change without sleeping.
  void write_user(const std::string& text, int stamp) {
    fs::path p = t_.write(fs::path("cache") / "presets.json", text);
    fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::hours(100 - stamp));
  }

  testing::TempDir t_{"lemon-presets"};
  std::unique_ptr<ModelCatalogue> models_;
};

TEST_F(PresetCatalogueTest, TheShippedPresetsAreValidAndUseCatalogueModels) {
  auto presets = open();
  auto report = presets->report();
  EXPECT_GE(report.builtin, 3);
  EXPECT_TRUE(report.errors.empty()) << report.errors.front();
  for (const auto& e : presets->list()) {
    EXPECT_TRUE(e.builtin);
    EXPECT_TRUE(models_->find(e.preset.model)) << e.preset.id << ": " << e.preset.model;
    EXPECT_EQ(models_->find(e.preset.model)->recipe, "llamacpp") << e.preset.id;
  }
  ASSERT_TRUE(presets->find("qwen3-precise") && presets->find("qwen3-creative"));
  EXPECT_EQ(presets->find("qwen3-precise")->server, presets->find("qwen3-creative")->server);
}

TEST_F(PresetCatalogueTest, ResolveGivesTheBaseModelUnderTheServerName) {
  write_user(json({{"big", {{"model", "Qwen3-4B-GGUF"}, {"ctx_size", 32768}}},
                   {"plain", {{"model", "Qwen3-4B-GGUF"}}}})
                 .dump(),
             1);
  auto presets = open();
  auto big = presets->find("big");
  ASSERT_TRUE(big);
  for (const std::string& name : {std::string("preset.big"), big->server}) {
    auto info = presets->resolve(name);
    ASSERT_TRUE(info.ok()) << name;
    EXPECT_EQ(info->name, big->server);
    EXPECT_EQ(info->recipe, "llamacpp");
    EXPECT_EQ(info->checkpoint(), models_->find("Qwen3-4B-GGUF")->checkpoint());
    EXPECT_EQ(info->saved_options.ctx_size(), 32768);
  }
  auto plain = presets->resolve("preset.plain");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->name, "Qwen3-4B-GGUF");
  EXPECT_EQ(presets->catalogue_name(big->server), "Qwen3-4B-GGUF");
  // Everything else is the catalogue's.
  EXPECT_TRUE(presets->resolve("Qwen3-8B-GGUF").ok());
  EXPECT_EQ(presets->resolve("preset.nope").error().code(), ErrorCode::kModelNotFound);
  EXPECT_EQ(presets->resolve("Qwen3-4B-GGUF~00000000").error().code(), ErrorCode::kModelNotFound);
  auto unknown = presets->for_request("preset.nope");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code(), ErrorCode::kModelNotFound);
  auto other = presets->for_request("Qwen3-4B-GGUF");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->has_value());
}

TEST_F(PresetCatalogueTest, ABrokenUserFileIsReportedAndStopsNothing) {
  write_user(
      "{\"ok\": {\"model\": \"Qwen3-4B-GGUF\"}, \"bad\": {\"model\": \"Qwen3-4B-GGUF\", "
      "\"sampling\": {\"top_p\": 7}}, \"qwen3-coder\": {\"model\": \"Qwen3-4B-GGUF\"}}",
      1);
  auto presets = open();
  auto report = presets->report();
  EXPECT_EQ(report.user, 1);
  ASSERT_EQ(report.errors.size(), 2u);
  EXPECT_NE(report.errors[0].find("presets.json: preset 'bad'"), std::string::npos);
  EXPECT_NE(report.errors[0].find("sampling.top_p"), std::string::npos);
  EXPECT_NE(report.errors[1].find("'qwen3-coder' takes a built-in"), std::string::npos);
  EXPECT_TRUE(presets->find("ok"));
  EXPECT_TRUE(presets->find("qwen3-coder")->builtin);

  write_user("{not json", 2);
  report = presets->report();
  EXPECT_EQ(report.user, 0);
  EXPECT_GE(report.builtin, 3);
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_NE(report.errors[0].find("is not valid JSON"), std::string::npos);
  EXPECT_TRUE(presets->resolve("preset.qwen3-precise").ok());
  // A write would lose the user's file: refused, the file kept.
  Status created = presets->create(parsed({{"model", "Qwen3-4B-GGUF"}}, "new"));
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.error().code(), ErrorCode::kConfigFileInvalid);
  EXPECT_NE(created.error().message().find("line 1, column"), std::string::npos)
      << created.error().message();
  std::ifstream in(t_.path() / "cache" / "presets.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{not json");
}

TEST_F(PresetCatalogueTest, WritesKeepBuiltInsReadOnlyAndCheckTheModel) {
  auto presets = open();
  EXPECT_TRUE(presets->create(parsed({{"model", "Qwen3-4B-GGUF"}}, "mine")).ok());
  EXPECT_EQ(presets->create(parsed({{"model", "Qwen3-4B-GGUF"}}, "mine")).error().code(),
            ErrorCode::kConflict);
  EXPECT_EQ(presets->create(parsed({{"model", "Qwen3-4B-GGUF"}}, "qwen3-coder")).error().code(),
            ErrorCode::kConflict);
  EXPECT_EQ(presets->replace(parsed({{"model", "Qwen3-4B-GGUF"}}, "qwen3-coder")).error().code(),
            ErrorCode::kConflict);
  EXPECT_EQ(presets->remove("qwen3-coder").error().code(), ErrorCode::kConflict);
  EXPECT_EQ(presets->replace(parsed({{"model", "Qwen3-4B-GGUF"}}, "nope")).error().code(),
            ErrorCode::kModelNotFound);
  EXPECT_EQ(presets->remove("nope").error().code(), ErrorCode::kModelNotFound);
  auto unknown_model = presets->create(parsed({{"model", "No-Such-Model"}}, "x"));
  ASSERT_FALSE(unknown_model.ok());
  EXPECT_EQ(unknown_model.error().param(), "model");

  ASSERT_TRUE(
      presets->replace(parsed({{"model", "Qwen3-8B-GGUF"}, {"ctx_size", 8192}}, "mine")).ok());
  EXPECT_EQ(presets->find("mine")->preset.model, "Qwen3-8B-GGUF");
  EXPECT_EQ(open()->find("mine")->preset.load_options.ctx_size(), 8192);  // on disk
  ASSERT_TRUE(presets->remove("mine").ok());
  EXPECT_FALSE(presets->find("mine"));
}

TEST_F(PresetCatalogueTest, AMissingBuiltInFileIsReported) {
  auto presets = open((t_.path() / "none.json").string());
  auto report = presets->report();
  EXPECT_EQ(report.builtin, 0);
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_NE(report.errors[0].find("not found"), std::string::npos);
}

}  // namespace
}  // namespace lemon
