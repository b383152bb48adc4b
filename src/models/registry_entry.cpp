#include "lemon/models/registry_entry.h"

#include <fstream>
#include <sstream>

#include "lemon/models/hf_cache.h"

namespace lemon {
namespace {

using ojson = nlohmann::ordered_json;

Error bad_entry(const std::string& name, const std::string& what) {
  return Error(ErrorCode::kInvalidOption, "model '" + name + "': " + what);
}

// Lemonade's image_defaults with its fallbacks for absent fields.
Result<nlohmann::json> normalize_image_defaults(const std::string& name, const ojson& in) {
  nlohmann::json out = nlohmann::json::object();
  auto int_field = [&](const char* key, int fallback) -> bool {
    auto it = in.find(key);
    if (it == in.end()) {
      out[key] = fallback;
      return true;
    }
    if (!it->is_number()) {
      return false;
    }
    out[key] = static_cast<int>(it->get<double>());
    return true;
  };
  bool ok = int_field("steps", 20);
  auto cfg = in.find("cfg_scale");
  if (cfg == in.end()) {
    out["cfg_scale"] = 7.0;
  } else if (cfg->is_number()) {
    out["cfg_scale"] = cfg->get<double>();
  } else {
    ok = false;
  }
  ok = int_field("width", 512) && ok;
  ok = int_field("height", 512) && ok;
  if (!ok) {
    return bad_entry(name, "image_defaults fields must be numbers");
  }
  return out;
}

// A collection's components (a non-empty array of names) and, for a
// router, its policy; an omni's system prompt.
Status parse_collection_fields(const std::string& name, const ojson& entry, ModelInfo& info) {
  auto components = entry.find("components");
  if (components == entry.end() || !components->is_array() || components->empty()) {
    return bad_entry(name, "a collection needs a non-empty \"components\" array");
  }
  for (const auto& c : *components) {
    if (!c.is_string() || c.get<std::string>().empty()) {
      return bad_entry(name, "\"components\" must hold model names");
    }
    info.components.push_back(c.get<std::string>());
  }
  info.collection = nlohmann::json::object();
  const bool router = info.recipe == kRouterRecipe;
  for (const char* key : {"version", "routing", "system_prompt"}) {
    auto it = entry.find(key);
    if (it != entry.end() && (router || std::string_view(key) == "system_prompt")) {
      info.collection[key] = nlohmann::json(*it);
    }
  }
  if (router && !info.collection.contains("routing")) {
    return bad_entry(name, "a collection.router needs its \"routing\" policy");
  }
  return ok_status();
}

}  // namespace

Result<ModelInfo> parse_registry_entry(const std::string& name, const ojson& entry,
                                       ModelSource source) {
  if (!entry.is_object()) {
    return bad_entry(name, "entry is not a JSON object");
  }
  ModelInfo info;
  info.name = name;
  info.source = source;

  auto recipe = entry.find("recipe");
  if (recipe == entry.end() || !recipe->is_string() || recipe->get<std::string>().empty()) {
    return bad_entry(name, "\"recipe\" must be a non-empty string");
  }
  info.recipe = recipe->get<std::string>();

  if (auto it = entry.find("checkpoint"); it != entry.end() && !it->is_null()) {
    if (!it->is_string()) {
      return bad_entry(name, "\"checkpoint\" must be a string");
    }
    if (!it->get<std::string>().empty()) {
      info.checkpoints["main"] = it->get<std::string>();
    }
  }
  if (auto it = entry.find("checkpoints"); it != entry.end() && !it->is_null()) {
    if (!it->is_object()) {
      return bad_entry(name, "\"checkpoints\" must be an object");
    }
    for (const auto& [role, value] : it->items()) {
      if (!value.is_string()) {
        return bad_entry(name, "checkpoints." + role + " must be a string");
      }
      info.checkpoints[role] = value.get<std::string>();
    }
  }
  if (is_collection_recipe(info.recipe)) {
    auto parsed = parse_collection_fields(name, entry, info);
    if (!parsed.ok()) {
      return std::move(parsed).error();
    }
  } else if (info.checkpoint().empty()) {
    return bad_entry(name, "no \"checkpoint\" (or \"checkpoints\".main)");
  }
  if (auto it = entry.find("mmproj"); it != entry.end() && !it->is_null()) {
    if (!it->is_string()) {
      return bad_entry(name, "\"mmproj\" must be a string");
    }
    // Legacy field: a file in the main checkpoint's repository. An explicit
    // checkpoints.mmproj wins, as in Lemonade.
    if (!it->get<std::string>().empty() && info.checkpoints.count("mmproj") == 0) {
      info.checkpoints["mmproj"] =
          hf::split_checkpoint(info.checkpoint()).repo + ":" + it->get<std::string>();
    }
  }

  bool is_user = source != ModelSource::kBuiltIn;
  info.suggested = is_user;
  if (auto it = entry.find("suggested"); it != entry.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      return bad_entry(name, "\"suggested\" must be a boolean");
    }
    info.suggested = it->get<bool>();
  }
  if (auto it = entry.find("size"); it != entry.end() && !it->is_null()) {
    if (!it->is_number()) {
      return bad_entry(name, "\"size\" must be a number");
    }
    info.size_gb = it->get<double>();
  }
  if (auto it = entry.find("labels"); it != entry.end() && !it->is_null()) {
    if (!it->is_array()) {
      return bad_entry(name, "\"labels\" must be an array of strings");
    }
    for (const auto& label : *it) {
      if (!label.is_string()) {
        return bad_entry(name, "\"labels\" must be an array of strings");
      }
      info.labels.push_back(label.get<std::string>());
    }
  }
  if (info.recipe == "remote") {
    info.remote = nlohmann::json::object();
    for (const char* key : {"policy", "endpoints"}) {
      if (auto it = entry.find(key); it != entry.end()) {
        info.remote[key] = *it;
      }
    }
  }
  if (auto it = entry.find("image_defaults"); it != entry.end() && it->is_object()) {
    auto normalized = normalize_image_defaults(name, *it);
    if (!normalized.ok()) {
      return std::move(normalized).error();
    }
    info.image_defaults = std::move(normalized).value();
  }
  if (is_user) {
    std::string src = entry.contains("source") && entry["source"].is_string()
                          ? entry["source"].get<std::string>()
                          : std::string();
    if (src == "local_path") {
      info.source = ModelSource::kUserLocalPath;
    } else if (src == "local_upload") {
      info.source = ModelSource::kUserLocalUpload;
    } else {
      info.source = ModelSource::kUser;
    }
  }
  info.type = model_type_of(info.labels, info.recipe);
  return info;
}

RecipeOptions saved_options_for(const ModelInfo& info, const nlohmann::json& saved,
                                std::vector<std::string>* problems) {
  RecipeOptions base;
  if (info.image_defaults.is_object()) {
    auto from_defaults = RecipeOptions::from_json(info.recipe, info.image_defaults);
    if (from_defaults.ok()) {
      base = std::move(from_defaults).value();
    } else if (problems != nullptr) {
      problems->push_back("image_defaults: " + from_defaults.error().message());
    }
  }
  RecipeOptions mine;
  if (saved.is_object()) {
    // Key by key, so one bad value does not discard the others.
    for (const auto& key : RecipeOptions::keys_for_recipe(info.recipe)) {
      auto it = saved.find(key);
      if (it == saved.end()) {
        continue;
      }
      auto one = RecipeOptions::from_json(info.recipe, nlohmann::json{{key, *it}});
      if (one.ok()) {
        mine = one->inherit(mine);
      } else if (problems != nullptr) {
        problems->push_back(one.error().message());
      }
    }
  } else if (!saved.is_null() && problems != nullptr) {
    problems->push_back("entry is not a JSON object");
  }
  return mine.inherit(base).restricted_to(info.recipe);
}

Result<std::vector<ModelInfo>> read_server_models(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Error(ErrorCode::kInvalidOption, "cannot read the model catalogue " + path);
  }
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    return Error(ErrorCode::kInvalidOption,
                 "the model catalogue " + path + " is not valid JSON: " + e.what());
  }
  if (!j.is_object()) {
    return Error(ErrorCode::kInvalidOption,
                 "the model catalogue " + path + " must be a JSON object keyed by model name");
  }
  std::vector<ModelInfo> out;
  for (const auto& [name, entry] : j.items()) {
    auto info = parse_registry_entry(name, entry, ModelSource::kBuiltIn);
    if (!info.ok()) {
      return Error(ErrorCode::kInvalidOption,
                   "the model catalogue " + path + " is malformed: " + info.error().message());
    }
    out.push_back(std::move(info).value());
  }
  return out;
}

}  // namespace lemon
