// TestEnv: one integration test's private world on disk — a temp dir with the
// router's cache dir (user_models.json, recipe_options.json), an HF cache and
// model files — removed when the test ends. It also builds the router's
// environment: a clean one, with every backend binary pointed at the fakes.
#pragma once

#include <chrono>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "support/temp_dir.h"

namespace lemon::testing {

// The deadline of every wait in the integration tests: generous, so that a
// bug fails the test instead of hanging it.
inline constexpr std::chrono::milliseconds kWait{30000};

// The fake backend programs (build/fakes/bin).
std::string fake_bin(const std::string& program);

class TestEnv {
 public:
  TestEnv();  // creates a fresh TempDir
  TestEnv(const TestEnv&) = delete;
  TestEnv& operator=(const TestEnv&) = delete;

  const std::string& root() const { return root_; }
  std::string cache_dir() const { return root_ + "/cache"; }
  std::string hf_cache() const { return root_ + "/hf"; }
  std::string models_dir() const { return root_ + "/models"; }

  // Creates models/<file> (the fakes accept any content); returns its path.
  std::string make_model_file(const std::string& file);
  // Adds or replaces user_models.json's entry `key`, served as "user.<key>".
  void add_user_model(const std::string& key, nlohmann::json entry);

  // User models of each kind; each returns the model file's path.
  std::string add_llm(const std::string& key);
  std::string add_embedding(const std::string& key);
  std::string add_whisper(const std::string& key);
  std::string add_reranker(const std::string& key);
  std::string add_image(const std::string& key);  // sd-cpp
  // One model of every type: user.a (llm), user.e (embedding), user.r
  // (reranking), user.w (whisper), user.i (sd-cpp image).
  void add_every_type();
  // A llamacpp model whose file does not exist.
  std::string add_missing_llm(const std::string& key);
  // An flm model; remember to list `checkpoint` in LEMON_FAKE_FLM_INSTALLED.
  void add_flm(const std::string& key, const std::string& checkpoint);

  // Fault knobs for the fake started on `model_path` (<path>.fake.json).
  void write_sidecar(const std::string& model_path, const nlohmann::json& knobs);
  // <cache>/recipe_options.json
  void write_recipe_options(const nlohmann::json& options);
  // <root>/conf/config.json (issue #30), and the variable that points the
  // router there: pass config_env() to start_router().
  std::string config_dir() const { return root_ + "/conf"; }
  void write_config(const nlohmann::json& config) const;
  std::map<std::string, std::string> config_env() const {
    return {{"LEMONADE_CONFIG_DIR", config_dir()}};
  }

  // The router's whole environment: PATH without the fakes, HOME, the cache
  // dirs, every LEMONADE_*_BIN pointing at a fake, and HF_ENDPOINT and
  // LEMONADE_RELEASES_URL at a closed loopback port (no test reaches the
  // internet).
  std::map<std::string, std::string> router_env() const;

 private:
  // models/<file> as a local_path model of `recipe`, labelled `label` unless empty.
  std::string add_local_model(const std::string& key, const std::string& file,
                              const std::string& recipe, const std::string& label);

  TempDir dir_{"lemon-it"};
  std::string root_ = dir_.path().string();
  nlohmann::json user_models_ = nlohmann::json::object();
};

// Writes `text` to `path` through a rename, so readers never see half a file.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace lemon::testing
