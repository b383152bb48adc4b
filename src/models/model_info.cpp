#include "lemon/models/model_info.h"

#include <algorithm>

#include <sys/stat.h>

namespace lemon {
namespace {

// Unix seconds of the last modification of `path` (following symlinks), or 0
// when it cannot be stat'ed (an FLM tag, a file removed since resolution).
long long mtime_seconds(const std::string& path) {
  if (path.empty()) {
    return 0;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return 0;
  }
  return static_cast<long long>(st.st_mtime);
}

}  // namespace

const std::string& ModelInfo::checkpoint() const {
  static const std::string kEmpty;
  auto it = checkpoints.find("main");
  return it == checkpoints.end() ? kEmpty : it->second;
}

std::string ModelInfo::resolved_path(const std::string& role) const {
  auto it = resolved_paths.find(role);
  return it == resolved_paths.end() ? std::string() : it->second;
}

nlohmann::json ModelInfo::to_api_json() const {
  nlohmann::json j = nlohmann::json::object();
  j["id"] = name;
  j["object"] = "model";
  // Lemonade hard-codes 1234567890 here; we report when the model's main file
  // last changed on disk, which is what "created" means for a local model.
  j["created"] = downloaded ? mtime_seconds(resolved_path("main")) : 0;
  j["owned_by"] = "lemonade";
  j["checkpoint"] = checkpoint();
  if (checkpoints.size() > 1) {
    j["checkpoints"] = checkpoints;
  }
  j["recipe"] = recipe;
  j["downloaded"] = downloaded;
  j["suggested"] = suggested;
  j["labels"] = labels;
  j["recipe_options"] = saved_options.to_json();
  if (size_gb > 0.0) {
    j["size"] = size_gb;
  }
  if (is_collection()) {
    j["components"] = components;
    if (collection.is_object()) {
      for (const auto& [key, value] : collection.items()) {
        j[key] = value;  // a router's version and routing; an omni's system_prompt
      }
    }
  }
  if (recipe == "sd-cpp" && image_defaults.is_object()) {
    j["image_defaults"] = image_defaults;
  }
  if (recipe == "remote" && remote.is_object()) {
    // Where it is served; the endpoints' health is in /health.
    nlohmann::json urls = nlohmann::json::array();
    if (auto it = remote.find("endpoints"); it != remote.end() && it->is_array()) {
      for (const auto& e : *it) {
        if (e.is_object() && e.contains("base_url") && e["base_url"].is_string()) {
          urls.push_back(e["base_url"]);
        }
      }
    }
    j["remote"] = {{"policy", remote.value("policy", nlohmann::json("failover"))},
                   {"endpoints", std::move(urls)}};
  }
  return j;
}

bool is_onnx_recipe(std::string_view recipe) {
  return recipe == "ryzenai-llm" || recipe.starts_with("oga-");
}

bool model_has_vision(const ModelInfo& info) {
  return std::find(info.labels.begin(), info.labels.end(), "vision") != info.labels.end() ||
         info.checkpoints.count("mmproj") > 0;
}

}  // namespace lemon
