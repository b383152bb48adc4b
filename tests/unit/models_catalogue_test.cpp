// ModelCatalogue: built-in catalogue, user models, recipe_options.json
// layering and reload, extra models dir, find/resolve/list.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "lemon/models/catalogue.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;

const std::string kServerModels = std::string(LEMON_RESOURCES_DIR) + "/server_models.json";

class ModelsCatalogue : public ::testing::Test {
 protected:
  CatalogueSources sources(const std::string& server_models = kServerModels) const {
    CatalogueSources s;
    s.server_models_json = server_models;
    s.cache_dir = (t_.path() / "cache").string();
    s.hf_hub_cache = (t_.path() / "hub").string();
    s.extra_models_dir = (t_.path() / "extra").string();
    s.flm_installed = [] { return std::vector<std::string>{}; };
    return s;
  }
  std::unique_ptr<ModelCatalogue> open(const CatalogueSources& s) const {
    auto cat = ModelCatalogue::open(s);
    EXPECT_TRUE(cat.ok()) << (cat.ok() ? "" : cat.error().message());
    return cat.ok() ? std::move(cat).value() : nullptr;
  }
  // Writes a cache-dir JSON file and gives it an explicit mtime, so a
  // rewrite is seen as a change without sleeping.
  void write_cache_json(const std::string& name, const nlohmann::ordered_json& j, int stamp) const {
    fs::path p = t_.write(fs::path("cache") / name, j.dump());
    fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::hours(100 - stamp));
  }
  fs::path hub_snapshot(const std::string& dir) const {
    fs::path snap = t_.path() / "hub" / dir / "snapshots" / "sha";
    fs::create_directories(snap);
    t_.write(fs::path("hub") / dir / "refs" / "main", "sha");
    return snap;
  }

  TempDir t_{"lemon-models"};
};

TEST_F(ModelsCatalogue, BuiltInCatalogueLoadsFromResources) {
  auto cat = open(sources());
  ASSERT_NE(cat, nullptr);
  auto qwen = cat->find("Qwen3-0.6B-GGUF");
  ASSERT_TRUE(qwen.has_value());
  EXPECT_EQ(qwen->checkpoint(), "unsloth/Qwen3-0.6B-GGUF:Q4_0");
  EXPECT_EQ(qwen->recipe, "llamacpp");
  EXPECT_EQ(qwen->labels, (std::vector<std::string>{"reasoning"}));
  EXPECT_TRUE(qwen->suggested);
  EXPECT_DOUBLE_EQ(qwen->size_gb, 0.38);
  EXPECT_EQ(qwen->source, ModelSource::kBuiltIn);

  auto gemma = cat->find("Gemma-3-4b-it-GGUF");
  ASSERT_TRUE(gemma.has_value());
  EXPECT_EQ(gemma->checkpoints.at("mmproj"), "ggml-org/gemma-3-4b-it-GGUF:mmproj-model-f16.gguf");

  EXPECT_EQ(cat->find("nomic-embed-text-v1-GGUF")->type, ModelType::kEmbedding);
  EXPECT_EQ(cat->find("bge-reranker-v2-m3-GGUF")->type, ModelType::kReranking);
  auto whisper = cat->find("Whisper-Tiny");
  EXPECT_EQ(whisper->type, ModelType::kAudio);
  EXPECT_EQ(whisper->checkpoint(), "ggerganov/whisper.cpp:ggml-tiny.bin");
  EXPECT_EQ(whisper->checkpoints.count("npu_cache"), 1u);
  auto sd = cat->find("SD-Turbo");
  EXPECT_EQ(sd->type, ModelType::kImage);
  EXPECT_EQ(sd->image_defaults,
            (json{{"steps", 4}, {"cfg_scale", 1.0}, {"width", 512}, {"height", 512}}));
  // image_defaults are the base of the saved options, as in Lemonade.
  EXPECT_EQ(sd->saved_options.raw(),
            (json{{"steps", 4}, {"cfg_scale", 1.0}, {"width", 512}, {"height", 512}}));
  EXPECT_EQ(cat->find("Llama-3.2-1B-FLM")->checkpoint(), "llama3.2:1b");
  EXPECT_FALSE(cat->find("kokoro-v1").has_value());

  auto all = cat->list(/*include_not_downloaded=*/true);
  EXPECT_EQ(all.size(), 167u);
  std::set<std::string> recipes;
  for (const auto& m : all) {
    recipes.insert(m.recipe);
  }
  EXPECT_EQ(recipes,
            (std::set<std::string>{"flm", "llamacpp", "ryzenai-llm", "sd-cpp", "whispercpp"}));

  // Catalogue order is the file's order.
  std::ifstream in(kServerModels);
  std::stringstream text;
  text << in.rdbuf();
  auto file = nlohmann::ordered_json::parse(text.str());
  std::size_t i = 0;
  for (const auto& [name, entry] : file.items()) {
    ASSERT_LT(i, all.size());
    EXPECT_EQ(all[i++].name, name);
  }
}

TEST_F(ModelsCatalogue, OpenFailsOnUnreadableOrMalformedCatalogue) {
  auto missing = ModelCatalogue::open(sources((t_.path() / "absent.json").string()));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kInvalidOption);
  EXPECT_NE(missing.error().message().find("absent.json"), std::string::npos);

  fs::path bad = t_.write("bad.json", "{\"a\": ");
  auto malformed = ModelCatalogue::open(sources(bad.string()));
  ASSERT_FALSE(malformed.ok());
  EXPECT_EQ(malformed.error().code(), ErrorCode::kInvalidOption);
  EXPECT_NE(malformed.error().message().find(bad.string()), std::string::npos);
  EXPECT_NE(malformed.error().message().find("parse error"), std::string::npos);

  fs::path no_recipe = t_.write("no_recipe.json", R"({"m": {"checkpoint": "a/b"}})");
  EXPECT_FALSE(ModelCatalogue::open(sources(no_recipe.string())).ok());
}

TEST_F(ModelsCatalogue, FindDoesNotResolveButResolveDoes) {
  fs::path snap = hub_snapshot("models--unsloth--Qwen3-0.6B-GGUF");
  t_.write(fs::relative(snap / "Qwen3-0.6B-Q4_0.gguf", t_.path()));
  auto cat = open(sources());
  auto found = cat->find("Qwen3-0.6B-GGUF");
  EXPECT_FALSE(found->downloaded);
  EXPECT_TRUE(found->resolved_paths.empty());
  auto resolved = cat->resolve("Qwen3-0.6B-GGUF");
  ASSERT_TRUE(resolved.ok());
  EXPECT_TRUE(resolved->downloaded);
  EXPECT_EQ(resolved->resolved_path(), (snap / "Qwen3-0.6B-Q4_0.gguf").string());

  EXPECT_EQ(cat->some_available_names(5), (std::vector<std::string>{"Qwen3-0.6B-GGUF"}));
  EXPECT_TRUE(cat->some_available_names(0).empty());
  auto downloaded = cat->list(false);
  ASSERT_EQ(downloaded.size(), 1u);
  EXPECT_EQ(downloaded[0].name, "Qwen3-0.6B-GGUF");
}

TEST_F(ModelsCatalogue, UnknownNameIsModelNotFound) {
  auto cat = open(sources());
  auto r = cat->resolve("No-Such-Model");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kModelNotFound);
  EXPECT_EQ(r.error().param(), "model");
  EXPECT_FALSE(cat->find("extra.nothing.gguf").has_value());
  EXPECT_FALSE(cat->resolve("user.nothing").ok());
}

TEST_F(ModelsCatalogue, FlmDownloadedStateComesFromTheInstalledList) {
  auto s = sources();
  s.flm_installed = [] { return std::vector<std::string>{"llama3.2:1b"}; };
  auto cat = open(s);
  EXPECT_TRUE(cat->resolve("Llama-3.2-1B-FLM")->downloaded);
  EXPECT_FALSE(cat->resolve("Llama-3.2-3B-FLM")->downloaded);
  s.flm_installed = nullptr;
  auto unknown = open(s);
  EXPECT_TRUE(unknown->resolve("Llama-3.2-3B-FLM")->downloaded);
}

TEST_F(ModelsCatalogue, NoCacheDirAndFailingFlmListAreNotFatal) {
  auto s = sources();
  s.cache_dir.clear();
  s.flm_installed = []() -> std::vector<std::string> { throw std::runtime_error("no flm"); };
  auto cat = open(s);
  ASSERT_NE(cat, nullptr);
  EXPECT_TRUE(cat->find("Qwen3-0.6B-GGUF")->saved_options.raw().empty());
  EXPECT_TRUE(cat->resolve("Llama-3.2-1B-FLM")->downloaded);  // unknown list: as if unset
}

TEST_F(ModelsCatalogue, UserModels) {
  fs::path local_file = t_.write("models/local.gguf");
  t_.write("models/dir/a-model.gguf");
  t_.write("hub/models--up/w.gguf");
  nlohmann::ordered_json users = {
      {"tiny",
       {{"checkpoint", "org/tiny-GGUF:Q4_0"},
        {"recipe", "llamacpp"},
        {"labels", {"custom", "embeddings"}},
        {"mmproj", "mm.gguf"},
        {"size", 0.1}}},
      {"local",
       {{"checkpoint", local_file.string()}, {"recipe", "llamacpp"}, {"source", "local_path"}}},
      {"localdir",
       {{"checkpoint", (t_.path() / "models/dir").string()},
        {"recipe", "llamacpp"},
        {"source", "local_path"}}},
      {"upload",
       {{"checkpoint", "models--up/w.gguf"}, {"recipe", "llamacpp"}, {"source", "local_upload"}}},
      {"broken", {{"recipe", 5}}}};
  write_cache_json("user_models.json", users, 1);
  auto cat = open(sources());

  ASSERT_TRUE(cat->find("tiny").has_value()) << "a bare name finds the user model";
  EXPECT_EQ(cat->find("tiny")->name, "user.tiny");
  EXPECT_FALSE(cat->find("user.broken").has_value());
  auto tiny = cat->find("user.tiny");
  ASSERT_TRUE(tiny.has_value());
  EXPECT_EQ(tiny->source, ModelSource::kUser);
  EXPECT_EQ(tiny->type, ModelType::kEmbedding);
  EXPECT_TRUE(tiny->suggested);
  EXPECT_EQ(tiny->checkpoints.at("mmproj"), "org/tiny-GGUF:mm.gguf");
  EXPECT_FALSE(cat->resolve("user.tiny")->downloaded);

  auto local = cat->resolve("user.local");
  EXPECT_EQ(local->source, ModelSource::kUserLocalPath);
  EXPECT_TRUE(local->downloaded);
  EXPECT_EQ(local->resolved_path(), local_file.string());
  auto dir = cat->resolve("user.localdir");
  EXPECT_TRUE(dir->downloaded);
  EXPECT_EQ(dir->resolved_path(), (t_.path() / "models/dir/a-model.gguf").string());
  auto upload = cat->resolve("user.upload");
  EXPECT_EQ(upload->source, ModelSource::kUserLocalUpload);
  EXPECT_TRUE(upload->downloaded);
  EXPECT_EQ(upload->resolved_path(), (t_.path() / "hub/models--up/w.gguf").string());

  // User models come after every built-in one, in file order.
  auto all = cat->list(true);
  std::vector<std::string> tail;
  for (const auto& m : all) {
    if (m.name.starts_with("user.")) {
      tail.push_back(m.name);
    }
  }
  EXPECT_EQ(tail,
            (std::vector<std::string>{"user.tiny", "user.local", "user.localdir", "user.upload"}));
  EXPECT_EQ(all[all.size() - 4].name, "user.tiny");
}

TEST_F(ModelsCatalogue, RecipeOptionsLayeringAndReload) {
  write_cache_json("user_models.json",
                   {{"mine", {{"checkpoint", "org/x:Q4_0"}, {"recipe", "llamacpp"}}}}, 1);
  write_cache_json(
      "recipe_options.json",
      {{"Qwen3-0.6B-GGUF", {{"ctx_size", 16384}, {"llamacpp_backend", "cuda"}, {"steps", 3}}},
       {"user.mine", {{"llamacpp_args", "-np 2"}}},
       {"SD-Turbo", {{"steps", 8}}}},
      1);
  auto cat = open(sources());
  EXPECT_EQ(cat->find("Qwen3-0.6B-GGUF")->saved_options.raw(), (json{{"ctx_size", 16384}}));
  EXPECT_EQ(cat->find("user.mine")->saved_options.raw(), (json{{"llamacpp_args", "-np 2"}}));
  EXPECT_EQ(cat->find("SD-Turbo")->saved_options.raw()["steps"], 8);
  EXPECT_EQ(cat->find("SD-Turbo")->saved_options.raw()["cfg_scale"], 1.0);
  EXPECT_EQ(cat->resolve("Qwen3-0.6B-GGUF")->to_api_json()["recipe_options"],
            (json{{"ctx_size", 16384}}));
  EXPECT_TRUE(cat->find("Qwen3-1.7B-GGUF")->saved_options.raw().empty());

  // Same size, new mtime: the new content is picked up.
  write_cache_json("recipe_options.json", {{"Qwen3-0.6B-GGUF", {{"ctx_size", 32768}}}}, 2);
  EXPECT_EQ(cat->find("Qwen3-0.6B-GGUF")->saved_options.raw(), (json{{"ctx_size", 32768}}));
  EXPECT_TRUE(cat->find("user.mine")->saved_options.raw().empty());

  // user_models.json changes too: a new entry appears, the old one goes.
  write_cache_json("user_models.json",
                   {{"other", {{"checkpoint", "org/y:Q8_0"}, {"recipe", "llamacpp"}}}}, 2);
  EXPECT_TRUE(cat->find("user.other").has_value());
  EXPECT_FALSE(cat->find("user.mine").has_value());

  // Deleted files read as empty; malformed ones too.
  fs::remove(t_.path() / "cache/user_models.json");
  EXPECT_FALSE(cat->find("user.other").has_value());
  t_.write("cache/recipe_options.json", "{not json");
  EXPECT_TRUE(cat->find("Qwen3-0.6B-GGUF")->saved_options.raw().empty());
}

TEST_F(ModelsCatalogue, ExtraModelsDirIsRescanned) {
  t_.write("extra/first.gguf");
  write_cache_json("recipe_options.json", {{"extra.second.gguf", {{"ctx_size", 1024}}}}, 1);
  auto cat = open(sources());
  auto downloaded = cat->list(false);
  ASSERT_EQ(downloaded.size(), 1u);
  EXPECT_EQ(downloaded[0].name, "extra.first.gguf");
  EXPECT_TRUE(downloaded[0].downloaded);

  // A file added after open() is found on first use of its name.
  fs::path second = t_.write("extra/second.gguf");
  auto found = cat->find("extra.second.gguf");
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(found->resolved_paths.empty());  // find() never reports files
  EXPECT_EQ(found->saved_options.raw(), (json{{"ctx_size", 1024}}));
  auto resolved = cat->resolve("extra.second.gguf");
  ASSERT_TRUE(resolved.ok());
  EXPECT_TRUE(resolved->downloaded);
  EXPECT_EQ(resolved->resolved_path(), second.string());

  // A file removed since the last scan is no longer a model.
  fs::remove(second);
  auto gone = cat->resolve("extra.second.gguf");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code(), ErrorCode::kModelNotFound);

  // Extra models come last in catalogue order.
  auto all = cat->list(true);
  EXPECT_EQ(all.back().name, "extra.first.gguf");
}

TEST_F(ModelsCatalogue, SmallCatalogueKeepsFileOrderAndDefaults) {
  fs::path file = t_.write("small.json", R"({
    "zeta": {"checkpoint": "a/z:Q4_0", "recipe": "llamacpp", "size": 1.5},
    "alpha": {"checkpoints": {"main": "a/b:f.bin"}, "recipe": "whispercpp", "labels": ["audio"]}
  })");
  auto cat = open(sources(file.string()));
  auto all = cat->list(true);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "zeta");
  EXPECT_EQ(all[1].name, "alpha");
  EXPECT_FALSE(all[0].suggested);  // built-in default
  EXPECT_EQ(all[1].checkpoint(), "a/b:f.bin");
  EXPECT_EQ(all[1].type, ModelType::kAudio);
  EXPECT_FALSE(all[1].downloaded);
  EXPECT_EQ(all[1].missing_paths,
            (std::vector<std::string>{(t_.path() / "hub/models--a--b").string()}));
}

TEST_F(ModelsCatalogue, ConcurrentReadersWhileFilesChange) {
  t_.write("extra/x.gguf");
  auto cat = open(sources());
  std::vector<std::thread> readers;
  std::atomic<int> failures{0};
  for (int r = 0; r < 4; ++r) {
    readers.emplace_back([&] {
      for (int i = 0; i < 30; ++i) {
        if (!cat->find("Qwen3-0.6B-GGUF") || !cat->resolve("extra.x.gguf").ok()) {
          ++failures;
        }
        (void)cat->find("user.u");
        if (i % 10 == 0 && cat->list(true).size() < 168) {
          ++failures;
        }
      }
    });
  }
  for (int i = 0; i < 30; ++i) {
    write_cache_json("recipe_options.json", {{"Qwen3-0.6B-GGUF", {{"ctx_size", 100 + i}}}}, i);
    write_cache_json("user_models.json",
                     {{"u", {{"checkpoint", "o/r:Q4_0"}, {"recipe", "llamacpp"}}}}, i);
  }
  for (auto& th : readers) {
    th.join();
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(cat->find("Qwen3-0.6B-GGUF")->saved_options.ctx_size(), 129);
}

}  // namespace
}  // namespace lemon
