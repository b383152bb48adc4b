#include "support/test_env.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace lemon::testing {
namespace fs = std::filesystem;

std::string fake_bin(const std::string& program) {
  return std::string(LEMON_FAKES_DIR) + "/" + program;
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw std::runtime_error("cannot write " + tmp);
    }
    out << text;
  }
  fs::rename(tmp, path);
}

TestEnv::TestEnv() {
  fs::create_directories(cache_dir());
  fs::create_directories(hf_cache());
  fs::create_directories(models_dir());
  fs::create_directories(root_ + "/home");
}

std::string TestEnv::make_model_file(const std::string& file) {
  std::string path = models_dir() + "/" + file;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << "GGUF fake model " << file << "\n";
  return path;
}

void TestEnv::add_user_model(const std::string& key, nlohmann::json entry) {
  user_models_[key] = std::move(entry);
  write_file_atomically(cache_dir() + "/user_models.json", user_models_.dump(2));
}

std::string TestEnv::add_local_model(const std::string& key, const std::string& file,
                                     const std::string& recipe, const std::string& label) {
  std::string path = make_model_file(file);
  nlohmann::json entry = {{"checkpoint", path}, {"recipe", recipe}};
  if (!label.empty()) {
    entry["labels"] = {label};
  }
  entry["source"] = "local_path";
  add_user_model(key, std::move(entry));
  return path;
}

std::string TestEnv::add_llm(const std::string& key) {
  return add_local_model(key, key + ".gguf", "llamacpp", "");
}

std::string TestEnv::add_embedding(const std::string& key) {
  return add_local_model(key, key + ".gguf", "llamacpp", "embeddings");
}

std::string TestEnv::add_whisper(const std::string& key) {
  return add_local_model(key, key + ".bin", "whispercpp", "audio");
}

std::string TestEnv::add_reranker(const std::string& key) {
  return add_local_model(key, key + ".gguf", "llamacpp", "reranking");
}

std::string TestEnv::add_image(const std::string& key) {
  return add_local_model(key, key + ".safetensors", "sd-cpp", "image");
}

void TestEnv::add_every_type() {
  add_llm("a");
  add_embedding("e");
  add_reranker("r");
  add_whisper("w");
  add_image("i");
}

std::string TestEnv::add_missing_llm(const std::string& key) {
  std::string path = models_dir() + "/does-not-exist-" + key + ".gguf";
  add_user_model(key, {{"checkpoint", path}, {"recipe", "llamacpp"}, {"source", "local_path"}});
  return path;
}

void TestEnv::add_flm(const std::string& key, const std::string& checkpoint) {
  add_user_model(key, {{"checkpoint", checkpoint}, {"recipe", "flm"}});
}

void TestEnv::write_sidecar(const std::string& model_path, const nlohmann::json& knobs) {
  write_file_atomically(model_path + ".fake.json", knobs.dump());
}

void TestEnv::write_config(const nlohmann::json& config) const {
  std::filesystem::create_directories(config_dir());
  write_file_atomically(config_dir() + "/config.json", config.dump());
}

void TestEnv::write_recipe_options(const nlohmann::json& options) {
  write_file_atomically(cache_dir() + "/recipe_options.json", options.dump(2));
}

std::map<std::string, std::string> TestEnv::router_env() const {
  return {
      {"PATH", "/usr/bin:/bin"},
      {"HOME", root_ + "/home"},
      {"TMPDIR", root_},
      {"LEMONADE_CACHE_DIR", cache_dir()},
      {"HF_HUB_CACHE", hf_cache()},
      {"LEMONADE_LLAMACPP_CPU_BIN", fake_bin("llama-server")},
      {"LEMONADE_FLM_BIN", fake_bin("flm")},
      {"LEMONADE_WHISPERCPP_NPU_BIN", fake_bin("whisper-server")},
      {"LEMONADE_WHISPERCPP_CPU_BIN", fake_bin("whisper-server")},
      {"LEMONADE_RYZENAILLM_NPU_BIN", fake_bin("ryzenai-server")},
      {"LEMONADE_SDCPP_CPU_BIN", fake_bin("sd-server")},
      // Never the real hub or GitHub: a closed loopback port unless a test
      // points these at its fake.
      {"HF_ENDPOINT", "http://127.0.0.1:9"},
      {"LEMONADE_RELEASES_URL", "http://127.0.0.1:9"},
  };
}

}  // namespace lemon::testing
