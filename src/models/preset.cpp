#include "lemon/models/preset.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <openssl/evp.h>

#include "lemon/core/hex.h"
#include "lemon/models/sampling_rule.h"

namespace lemon {
namespace {

constexpr const char* kReasoningFormats[] = {"none", "deepseek", "deepseek-legacy", "auto"};

Error bad_preset(const std::string& field, const std::string& why) {
  return Error(ErrorCode::kInvalidRequest, "preset field '" + field + "' " + why, field);
}

std::optional<Error> check_model(const std::string& model) {
  if (model.empty()) {
    return bad_preset("model", "must be a non-empty string");
  }
  for (unsigned char c : model) {
    if (c < 0x20 || c == 0x7f) {
      return bad_preset("model", "must not hold control characters");
    }
  }
  Preset probe;
  probe.model = model;
  switch (probe.model_kind()) {
    case PresetModelKind::kLocalPath:
      if (std::filesystem::path(model).extension() != ".gguf" || model.find("/../") != model.npos) {
        return bad_preset("model", "as a path must be an absolute path to a .gguf file");
      }
      break;
    case PresetModelKind::kCheckpoint: {
      const std::string repo = model.substr(0, model.find(':'));
      const auto slash = repo.find('/');
      if (slash == 0 || slash + 1 >= repo.size() || repo.find('/', slash + 1) != repo.npos ||
          repo.find(' ') != repo.npos) {
        return bad_preset("model", "as a checkpoint must be 'owner/repo' or 'owner/repo:VARIANT'");
      }
      break;
    }
    case PresetModelKind::kCatalogue:
      if (model.find(' ') != model.npos) {
        return bad_preset("model",
                          "must be a catalogue name, a checkpoint or an absolute .gguf path");
      }
      break;
  }
  return std::nullopt;
}

Result<nlohmann::json> parse_sampling(const nlohmann::json& j) {
  if (!j.is_object()) {
    return bad_preset("sampling", "must be an object");
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : j.items()) {
    const SamplingRule* rule = find_sampling_rule(key);
    const std::string field = "sampling." + key;
    if (rule == nullptr || !rule->in_presets) {
      return bad_preset(
          field, "is unknown (sampling takes temperature, top_p, top_k, min_p, repeat_penalty)");
    }
    if (value.is_null()) {
      continue;
    }
    if (auto problem = sampling_value_problem(*rule, value)) {
      return bad_preset(field, *problem);
    }
    out[key] = value;
  }
  return out;
}

// The fields a request is made of, which `set` and `strip` may not touch.
bool structural_field(std::string_view key) {
  for (const char* f : {"model", "messages", "prompt", "input", "stream", "stream_options"}) {
    if (key == f) {
      return true;
    }
  }
  return false;
}

std::optional<Error> check_enforced_key(const std::string& field, const std::string& key) {
  if (key.empty() || structural_field(key)) {
    return bad_preset(field, "cannot name '" + key +
                                 "' (model, messages, prompt, input, stream and stream_options "
                                 "are the request's own)");
  }
  return std::nullopt;
}

Result<nlohmann::json> parse_set(const nlohmann::json& j) {
  if (!j.is_object()) {
    return bad_preset("set", "must be an object of request fields and their values");
  }
  for (const auto& [key, value] : j.items()) {
    const std::string field = "set." + key;
    if (auto problem = check_enforced_key(field, key)) {
      return *problem;
    }
    if (value.is_null()) {
      return bad_preset(field, "must not be null (strip removes a field)");
    }
    if (const SamplingRule* rule = find_sampling_rule(key)) {
      if (auto problem = sampling_value_problem(*rule, value)) {
        return bad_preset(field, *problem);
      }
    }
  }
  return j;
}

Result<std::vector<std::string>> parse_strip(const nlohmann::json& j) {
  if (!j.is_array()) {
    return bad_preset("strip", "must be an array of request field names");
  }
  std::vector<std::string> out;
  for (const auto& item : j) {
    if (!item.is_string()) {
      return bad_preset("strip", "must hold only field names");
    }
    const std::string key = item.get<std::string>();
    if (auto problem = check_enforced_key("strip", key)) {
      return *problem;
    }
    if (std::find(out.begin(), out.end(), key) == out.end()) {
      out.push_back(key);
    }
  }
  return out;
}

std::string sha256_hex(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha256(), nullptr);
  return lower_hex(digest, size);
}

}  // namespace

PresetModelKind Preset::model_kind() const {
  if (model.starts_with('/')) {
    return PresetModelKind::kLocalPath;
  }
  if (model.find('/') != model.npos && !model.starts_with("user.") &&
      !model.starts_with("extra.")) {
    return PresetModelKind::kCheckpoint;
  }
  return PresetModelKind::kCatalogue;
}

bool Preset::has_load_overrides() const {
  return !load_options.raw().empty() || model_kind() != PresetModelKind::kCatalogue;
}

std::string Preset::load_identity() const {
  // nlohmann::json (not ordered) keeps keys sorted: one text per settings.
  nlohmann::json identity = {{"model", model}, {"options", load_options.raw()}};
  return identity.dump();
}

std::string Preset::server_name() const {
  if (!has_load_overrides()) {
    return model;
  }
  std::string base = model;
  if (model_kind() == PresetModelKind::kLocalPath) {
    base = std::filesystem::path(model).filename().string();
  }
  return base + "~" + sha256_hex(load_identity()).substr(0, 8);
}

nlohmann::ordered_json Preset::to_json() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (!name.empty()) {
    j["name"] = name;
  }
  if (!description.empty()) {
    j["description"] = description;
  }
  j["model"] = model;
  for (const auto& [key, value] : load_options.raw().items()) {
    j[key] = value;
  }
  if (!reasoning_format.empty()) {
    j["reasoning_format"] = reasoning_format;
  }
  if (chat_template_kwargs.is_object()) {
    j["chat_template_kwargs"] = chat_template_kwargs;
  }
  if (!sampling.empty()) {
    j["sampling"] = sampling;
  }
  if (!set.empty()) {
    j["set"] = set;
  }
  if (!strip.empty()) {
    j["strip"] = strip;
  }
  return j;
}

bool valid_preset_id(std::string_view id) {
  if (id.empty() || id.size() > 64) {
    return false;
  }
  if (const auto colon = id.find(':'); colon != std::string_view::npos) {
    if (colon == 0 || colon + 1 == id.size() || id.find(':', colon + 1) != std::string_view::npos) {
      return false;
    }
  }
  for (char c : id) {
    if (c == ':') {
      continue;
    }
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) {
      return false;
    }
  }
  return true;
}

Result<Preset> parse_preset(std::string_view id, const nlohmann::json& entry) {
  if (!valid_preset_id(id)) {
    return bad_preset("id",
                      "must be 1 to 64 characters from A-Z, a-z, 0-9, '.', '_' and '-', with at "
                      "most one ':' between two parts (NAME:VARIANT)");
  }
  if (!entry.is_object()) {
    return Error(ErrorCode::kInvalidRequest,
                 "preset '" + std::string(id) + "' must be a JSON object", "preset");
  }
  const auto load_keys = RecipeOptions::keys_for_recipe("llamacpp");
  const std::set<std::string> load_set(load_keys.begin(), load_keys.end());
  Preset p;
  p.id = std::string(id);
  nlohmann::json load = nlohmann::json::object();
  for (const auto& [key, value] : entry.items()) {
    if (key == "name" || key == "description") {
      if (!value.is_string()) {
        return bad_preset(key, "must be a string");
      }
      (key == "name" ? p.name : p.description) = value.get<std::string>();
    } else if (key == "model") {
      if (!value.is_string()) {
        return bad_preset(key, "must be a string");
      }
      p.model = value.get<std::string>();
    } else if (key == "reasoning_format") {
      bool known = false;
      for (const char* f : kReasoningFormats) {
        known = known || (value.is_string() && value.get<std::string>() == f);
      }
      if (!known) {
        return bad_preset(key, "must be one of none, deepseek, deepseek-legacy, auto");
      }
      p.reasoning_format = value.get<std::string>();
    } else if (key == "chat_template_kwargs") {
      if (!value.is_object()) {
        return bad_preset(key, "must be an object");
      }
      p.chat_template_kwargs = value;
    } else if (key == "sampling") {
      auto sampling = parse_sampling(value);
      if (!sampling.ok()) {
        return std::move(sampling).error();
      }
      p.sampling = std::move(sampling).value();
    } else if (key == "set") {
      auto set = parse_set(value);
      if (!set.ok()) {
        return std::move(set).error();
      }
      p.set = std::move(set).value();
    } else if (key == "strip") {
      auto strip = parse_strip(value);
      if (!strip.ok()) {
        return std::move(strip).error();
      }
      p.strip = std::move(strip).value();
    } else if (load_set.contains(key)) {
      load[key] = value;
    } else {
      return bad_preset(key, "is unknown");
    }
  }
  if (!entry.contains("model")) {
    return bad_preset("model", "is required");
  }
  if (auto problem = check_model(p.model)) {
    return *problem;
  }
  // The load options' checks are the /load route's, shared.
  auto options = RecipeOptions::from_json("llamacpp", load);
  if (!options.ok()) {
    const Error& e = options.error();
    return Error(ErrorCode::kInvalidRequest, "preset " + e.message(), e.param());
  }
  p.load_options = std::move(options).value();
  return p;
}

PresetEnforced enforce_preset(const Preset& preset, nlohmann::json& body, bool* changed) {
  PresetEnforced done;
  bool touched = false;
  for (const std::string& key : preset.strip) {
    if (body.erase(key) > 0) {
      ++done.stripped;
      touched = true;
    }
  }
  for (const auto& [key, value] : preset.set.items()) {
    auto it = body.find(key);
    if (it == body.end()) {
      body[key] = value;
      touched = true;
    } else if (*it != value) {
      *it = value;
      ++done.overridden;
      touched = true;
    }
  }
  if (changed != nullptr) {
    *changed = touched;
  }
  return done;
}

bool apply_preset_defaults(const Preset& preset, nlohmann::json& body) {
  bool changed = false;
  for (const auto& [key, value] : preset.sampling.items()) {
    if (!body.contains(key)) {
      body[key] = value;
      changed = true;
    }
  }
  if (!preset.reasoning_format.empty() && !body.contains("reasoning_format")) {
    body["reasoning_format"] = preset.reasoning_format;
    changed = true;
  }
  if (preset.chat_template_kwargs.is_object() && !preset.chat_template_kwargs.empty()) {
    auto it = body.find("chat_template_kwargs");
    if (it == body.end() || it->is_null()) {
      body["chat_template_kwargs"] = preset.chat_template_kwargs;
      changed = true;
    } else if (it->is_object()) {
      for (const auto& [key, value] : preset.chat_template_kwargs.items()) {
        if (!it->contains(key)) {
          (*it)[key] = value;
          changed = true;
        }
      }
    }
  }
  return changed;
}

}  // namespace lemon
