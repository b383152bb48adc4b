#include "lemon/options/config_file.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

#include <CLI/CLI.hpp>

#include "lemon/options/router_settings.h"

namespace lemon {
namespace {

// `llamacpp`, `sdcpp`, `whispercpp`: Lemonade's sections of settings.
bool is_lemonade_section(const std::string& key) {
  const std::string prefix = key + ".";
  return std::any_of(router_settings().begin(), router_settings().end(),
                     [&](const Setting& s) { return s.key.starts_with(prefix); });
}

// "<origin>: '<path>'<what>", the shape of every error about a file.
Error setting_error(const std::string& origin, const std::string& path, std::string_view what) {
  std::string message = origin;
  message.append(": '").append(path).append("'").append(what);
  return Error(ErrorCode::kInvalidRequest, message, path);  // param: the key (POST /internal/set)
}

std::string env_text(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

// The setting's value as its option reads it from `value`; an error for a
// JSON type the setting cannot take.
Result<std::string> option_text(const Setting& setting, const nlohmann::json& value,
                                const std::string& where) {
  auto wrong = [&](const char* want) {
    return Error(ErrorCode::kInvalidRequest,
                 where + ": expected " + want + ", got " + value.type_name());
  };
  switch (setting.shape) {
    case SettingShape::kSwitch:
      if (!value.is_boolean()) {
        return wrong("true or false");
      }
      return std::string(value.get<bool>() ? "true" : "false");
    case SettingShape::kInteger:
    case SettingShape::kLongInteger:
      if (!value.is_number_integer()) {
        return wrong("an integer");
      }
      return value.dump();
    case SettingShape::kNumber:
      if (!value.is_number()) {
        return wrong("a number");
      }
      return value.dump();
    case SettingShape::kList:
      if (value.is_array()) {
        std::string joined;  // the comma-separated settings also take a list
        for (const auto& item : value) {
          if (!item.is_string()) {
            return wrong("a string or a list of strings");
          }
          joined += (joined.empty() ? "" : ",") + item.get<std::string>();
        }
        return joined;
      }
      break;
    case SettingShape::kWords:
      if (value.is_array()) {
        std::string joined;
        for (const auto& item : value) {
          if (!item.is_string() && !item.is_number()) {
            return wrong("strings or numbers in the list");
          }
          joined += (joined.empty() ? "" : " ") +
                    (item.is_string() ? item.get<std::string>() : item.dump());
        }
        return joined;
      }
      break;
    case SettingShape::kText:
    case SettingShape::kOptionalValue:
    case SettingShape::kSection:
      break;
  }
  // Text settings: a string, or a number where one reads as text (a
  // duration in seconds, a port).
  if (value.is_string()) {
    return value.get<std::string>();
  }
  if (value.is_number()) {
    return value.dump();
  }
  return wrong("a string");
}

Status apply_one(CLI::App& app, const std::string& key, const nlohmann::json& value,
                 const std::string& origin, std::map<std::string, std::string>& sources) {
  const std::string where = origin + ": '" + key + "'";
  const Setting* setting = find_setting(key);
  CLI::Option* opt = setting != nullptr && setting->is_setting && !setting->flag.empty()
                         ? app.get_option_no_throw(setting->flag)
                         : nullptr;
  if (opt == nullptr) {
    return Error(ErrorCode::kInvalidRequest, where + " is not a setting", key);
  }
  auto text = option_text(*setting, value, where);
  if (!text.ok()) {
    return Error(text.error().code(), text.error().message(), key);
  }
  try {
    opt->run_callback_for_default();
    opt->default_val(*text);
  } catch (const CLI::Error& e) {
    std::string why = e.what();
    std::replace(why.begin(), why.end(), '\n', ' ');
    return Error(ErrorCode::kInvalidRequest, where + ": " + why, key);
  }
  sources[key] = origin;
  return ok_status();
}

}  // namespace

void merge_config_changes(nlohmann::ordered_json& file, const nlohmann::json& changes) {
  for (const auto& [key, value] : changes.items()) {
    if (value.is_object() && file.contains(key) && file[key].is_object()) {
      for (const auto& [inner, inner_value] : value.items()) {
        if (inner_value.is_null()) {
          file[key].erase(inner);
        } else {
          file[key][inner] = inner_value;
        }
      }
    } else if (value.is_null()) {
      file.erase(key);
    } else {
      file[key] = value;
    }
  }
}

std::filesystem::path config_dir() {
  if (std::string dir = env_text("LEMONADE_CONFIG_DIR"); !dir.empty()) {
    return dir;
  }
  std::string home = env_text("HOME");
  return std::filesystem::path(home.empty() ? "/tmp" : home) / ".config" / "lemonade";
}

std::filesystem::path lemonade_cache_dir() {
  if (std::string dir = env_text("LEMONADE_CACHE_DIR"); !dir.empty()) {
    return dir;
  }
  std::string home = env_text("HOME");
  return std::filesystem::path(home.empty() ? "/tmp" : home) / ".cache" / "lemonade";
}

ConfigFileLocation locate_config_file() {
  ConfigFileLocation out;
  out.file = config_dir() / "config.json";
  const std::filesystem::path lemonade11 = lemonade_cache_dir() / "config.json";
  std::error_code ec;
  const bool ours = std::filesystem::exists(out.file, ec);
  const bool theirs = std::filesystem::exists(lemonade11, ec) &&
                      std::filesystem::weakly_canonical(lemonade11, ec) !=
                          std::filesystem::weakly_canonical(out.file, ec);
  if (ours && theirs) {
    out.ignored = lemonade11;
  } else if (theirs) {
    out.file = lemonade11;
  }
  return out;
}

std::filesystem::path distro_defaults_file() {
  if (std::string file = env_text("LEMONADE_DEFAULTS_FILE"); !file.empty()) {
    return file;
  }
  return "/usr/share/lemonade-router/defaults.json";
}

std::string config_key_of_flag(const std::string& flag) {
  for (const Setting& s : router_settings()) {
    if (s.flag == flag && s.is_setting) {
      return s.key;
    }
  }
  return "";
}

Result<nlohmann::json> read_config_file(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    return nlohmann::json::object();
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return Error(ErrorCode::kInvalidRequest, file.string() + ": cannot be read");
  }
  std::ostringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    std::string why = e.what();
    std::replace(why.begin(), why.end(), '\n', ' ');
    return Error(ErrorCode::kInvalidRequest, file.string() + ": not JSON: " + why);
  }
  if (!j.is_object()) {
    return Error(ErrorCode::kInvalidRequest, file.string() + ": expected a JSON object");
  }
  return j;
}

Status apply_config_file(CLI::App& app, const nlohmann::json& values, const std::string& origin,
                         std::map<std::string, std::string>& sources) {
  for (const auto& [key, value] : values.items()) {
    if (is_lemonade_section(key)) {
      if (!value.is_object()) {
        return setting_error(origin, key, ": expected an object (its settings)");
      }
      for (const auto& [inner, inner_value] : value.items()) {
        std::string path = key;
        path.append(".").append(inner);
        if (find_setting(path) == nullptr) {
          return setting_error(origin, path, " is not a setting");
        }
        if (Status s = apply_one(app, path, inner_value, origin, sources); !s.ok()) {
          return s;
        }
      }
      continue;
    }
    const Setting* setting = find_setting(key);
    if (value.is_null() || (setting != nullptr && setting->shape == SettingShape::kSection)) {
      continue;  // null keeps the default; the sections are read whole (settings_reader.h)
    }
    if (Status s = apply_one(app, key, value, origin, sources); !s.ok()) {
      return s;
    }
  }
  return ok_status();
}

}  // namespace lemon
