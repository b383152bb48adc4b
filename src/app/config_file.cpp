#include "lemon/app/config_file.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

#include <CLI/CLI.hpp>

namespace lemon {
namespace {

// Lemonade's sectioned keys: the flag each one sets.
const std::map<std::string, std::string, std::less<>>& sectioned_keys() {
  static const std::map<std::string, std::string, std::less<>> keys = {
      {"llamacpp.backend", "--llamacpp"}, {"llamacpp.args", "--llamacpp-args"},
      {"sdcpp.backend", "--sdcpp"},       {"sdcpp.steps", "--steps"},
      {"sdcpp.cfg_scale", "--cfg-scale"}, {"sdcpp.width", "--width"},
      {"sdcpp.height", "--height"},       {"whispercpp.backend", "--whispercpp"}};
  return keys;
}

// Options that are no setting: a launcher's descriptor, help, version.
bool is_setting(const std::string& flag) {
  return flag != "--ready-fd" && flag != "--help" && flag != "--version" &&
         flag != "--settings-markdown";
}

// "<origin>: '<path>'<what>", the shape of every error about a file.
Error setting_error(const std::string& origin, const std::string& path, std::string_view what) {
  std::string message = origin;
  message.append(": '").append(path).append("'").append(what);
  return Error(ErrorCode::kInvalidRequest, message, path);  // param: the key (POST /internal/set)
}

CLI::Option* option_of_key(CLI::App& app, const std::string& key) {
  for (CLI::Option* opt : app.get_options()) {
    for (const auto& name : opt->get_lnames()) {
      if (config_key_of_flag("--" + name) == key) {
        return opt;
      }
    }
  }
  return nullptr;
}

std::string env_text(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

// The option's value as CLI11 reads it from `value`; an error for a JSON
// type the option cannot take.
Result<std::string> option_text(const CLI::Option& opt, const nlohmann::json& value,
                                const std::string& where) {
  const bool flag = opt.get_expected_min() == 0 && opt.get_expected_max() == 0;
  const std::string type = opt.get_type_name();
  auto wrong = [&](const char* want) {
    return Error(ErrorCode::kInvalidRequest,
                 where + ": expected " + want + ", got " + value.type_name());
  };
  if (flag) {
    if (!value.is_boolean()) {
      return wrong("true or false");
    }
    return std::string(value.get<bool>() ? "true" : "false");
  }
  const bool integer = type.find("INT") != std::string::npos;
  const bool number = integer || type.find("FLOAT") != std::string::npos ||
                      type.find("NUMBER") != std::string::npos;
  if (value.is_array() && opt.get_expected_max() <= 1 && !number &&
      (opt.get_name() == "--default-model" || opt.get_name() == "--cors-origins")) {
    std::string joined;  // the comma-separated settings also take a list
    for (const auto& item : value) {
      if (!item.is_string()) {
        return wrong("a string or a list of strings");
      }
      joined += (joined.empty() ? "" : ",") + item.get<std::string>();
    }
    return joined;
  }
  if (value.is_array()) {
    if (opt.get_expected_max() <= 1) {
      return wrong(integer ? "an integer" : number ? "a number" : "a string");
    }
    std::string joined;
    for (const auto& item : value) {
      if (!item.is_string() && !item.is_number()) {
        return wrong("strings or numbers in the list");
      }
      joined +=
          (joined.empty() ? "" : " ") + (item.is_string() ? item.get<std::string>() : item.dump());
    }
    return joined;
  }
  if (integer) {
    if (!value.is_number_integer()) {
      return wrong("an integer");
    }
    return value.dump();
  }
  if (number) {
    if (!value.is_number()) {
      return wrong("a number");
    }
    return value.dump();
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
  CLI::Option* opt = nullptr;
  if (auto sectioned = sectioned_keys().find(key); sectioned != sectioned_keys().end()) {
    opt = app.get_option_no_throw(sectioned->second);
  } else {
    opt = option_of_key(app, key);
  }
  if (opt == nullptr || !is_setting(opt->get_name())) {
    return Error(ErrorCode::kInvalidRequest, where + " is not a setting", key);
  }
  auto text = option_text(*opt, value, where);
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

std::filesystem::path distro_defaults_file() {
  if (std::string file = env_text("LEMONADE_DEFAULTS_FILE"); !file.empty()) {
    return file;
  }
  return "/usr/share/lemonade-router/defaults.json";
}

std::string config_key_of_flag(const std::string& flag) {
  for (const auto& [key, f] : sectioned_keys()) {
    if (f == flag) {
      return key;
    }
  }
  if (!flag.starts_with("--") || !is_setting(flag)) {
    return "";
  }
  std::string key = flag.substr(2);
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
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
    const bool section = key == "llamacpp" || key == "sdcpp" || key == "whispercpp";
    if (section) {
      if (!value.is_object()) {
        return setting_error(origin, key, ": expected an object (its settings)");
      }
      for (const auto& [inner, inner_value] : value.items()) {
        std::string path = key;
        path.append(".").append(inner);
        if (!sectioned_keys().contains(path)) {
          return setting_error(origin, path, " is not a setting");
        }
        if (Status s = apply_one(app, path, inner_value, origin, sources); !s.ok()) {
          return s;
        }
      }
      continue;
    }
    if (value.is_null() || key == "auth" || key == "profiles" || key == "remote" ||
        key == "remote_discovery") {
      continue;  // null keeps the default; the structured sections are read by parse_config
    }
    if (Status s = apply_one(app, key, value, origin, sources); !s.ok()) {
      return s;
    }
  }
  return ok_status();
}

}  // namespace lemon
