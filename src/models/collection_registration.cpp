#include "lemon/models/collection_registration.h"

#include <algorithm>

#include "lemon/models/registry_entry.h"

namespace lemon {
namespace {

Error refused(const std::string& message, const char* param) {
  return Error(ErrorCode::kInvalidRequest, message, param);
}

// "user.X" and "X" name the same registration.
std::string bare(std::string_view name) {
  return std::string(name.starts_with("user.") ? name.substr(5) : name);
}

}  // namespace

bool is_collection_registration(const nlohmann::json& body) {
  auto it = body.find("recipe");
  return it != body.end() && it->is_string() && is_collection_recipe(it->get<std::string>());
}

std::optional<std::string> registered_name(std::string_view name,
                                           const RegisteredLookup& registered) {
  if (auto found = registered(name)) {
    return found->name;
  }
  if (!name.starts_with("user.")) {
    if (auto found = registered("user." + std::string(name))) {
      return found->name;
    }
  }
  return std::nullopt;
}

Result<UserModelRegistration> parse_collection_registration(std::string_view model_name,
                                                            const nlohmann::json& body,
                                                            const RegisteredLookup& registered) {
  if (!model_name.starts_with("user.") || model_name.size() == 5) {
    return refused(
        "Registered model definitions must use a non-empty `user.*` name, for example "
        "`user.Phi-4-Mini-GGUF`. Received: " +
            std::string(model_name),
        "model_name");
  }
  if (Status key = check_user_model_key(model_name.substr(5)); !key.ok()) {
    return std::move(key).error();
  }
  const std::string recipe = body["recipe"].get<std::string>();
  if (auto models = body.find("models"); models != body.end() && !models->is_null()) {
    return refused(
        "inline model definitions ('models') are not supported: register each component, then "
        "the collection",
        "models");
  }
  auto components = body.find("components");
  if (components != body.end() && !components->is_null() && !components->is_array()) {
    return refused("`components` must be an array when provided", "components");
  }
  if (components == body.end() || components->is_null() || components->empty()) {
    return refused("Collection recipe requires a non-empty 'components' array", "components");
  }
  nlohmann::ordered_json names = nlohmann::ordered_json::array();
  for (const auto& c : *components) {
    if (!c.is_string() || c.get<std::string>().empty()) {
      return refused("Every collection component must be a string model name", "components");
    }
    const std::string name = c.get<std::string>();
    if (bare(name) == bare(model_name)) {
      return refused("Collection cannot reference itself: " + name, "components");
    }
    auto canonical = registered_name(name, registered);
    if (!canonical) {
      return refused("Collection component not registered: '" + name +
                         "'. Pull or register it before referencing it in a collection.",
                     "components");
    }
    if (is_collection_recipe(registered(*canonical)->recipe)) {
      return refused(
          "Collection components must be regular models, not collections: '" + name + "'",
          "components");
    }
    if (std::find(names.begin(), names.end(), *canonical) == names.end()) {
      names.push_back(*canonical);
    }
  }
  UserModelRegistration reg;
  reg.key = bare(model_name);
  nlohmann::ordered_json& entry = reg.entry;
  entry["recipe"] = recipe;
  entry["components"] = std::move(names);
  if (recipe == kRouterRecipe) {
    for (const char* key : {"version", "routing"}) {
      if (auto it = body.find(key); it != body.end()) {
        entry[key] = nlohmann::ordered_json(*it);
      }
    }
  } else if (auto prompt = body.find("system_prompt"); prompt != body.end() && !prompt->is_null()) {
    if (!prompt->is_string()) {
      return refused("'system_prompt' must be a string", "system_prompt");
    }
    entry["system_prompt"] = prompt->get<std::string>();
  }
  entry["labels"] = {"chat", "custom"};
  entry["suggested"] = true;
  auto parsed = parse_registry_entry(std::string(model_name), entry, ModelSource::kUser);
  if (!parsed.ok()) {
    return Error(ErrorCode::kInvalidRequest, parsed.error().message(), "model_name");
  }
  return reg;
}

void canonicalize_components(std::vector<ModelInfo>& entries, const RegisteredLookup& others) {
  const RegisteredLookup registered = [&](std::string_view name) -> std::optional<ModelInfo> {
    auto own = std::find_if(entries.begin(), entries.end(),
                            [&](const ModelInfo& m) { return m.name == name; });
    return own != entries.end() ? std::optional<ModelInfo>(*own) : others(name);
  };
  for (auto& info : entries) {
    std::vector<std::string> names;
    for (const auto& component : info.components) {
      names.push_back(registered_name(component, registered).value_or(component));
    }
    info.components = std::move(names);
  }
}

std::vector<std::string> collections_using(const std::vector<ModelInfo>& registered,
                                           std::string_view model) {
  std::vector<std::string> out;
  for (const auto& info : registered) {
    if (std::find(info.components.begin(), info.components.end(), model) != info.components.end()) {
      out.push_back(info.name);
    }
  }
  return out;
}

}  // namespace lemon
