#include "lemon/options/lemonade11_config.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>

#include "lemon/options/command_line.h"
#include "lemon/options/router_settings.h"

namespace lemon {
namespace {

// 11's top-level keys that nothing here applies.
const std::vector<std::string>& unapplied_top_level() {
  static const std::vector<std::string> keys = {
      "_generated",
      "config_version",
      "auto_check_model_updates",
      "no_fetch_executables",
      "disable_model_filtering",
      "enable_dgpu_gtt",
      "inhibit_suspend",
      "rocm_channel",
      "rocm",
      "rocm_install_method",
      "cloud_providers",
      "telemetry",
  };
  return keys;
}

// 11's sections of backends this router does not run.
const std::vector<std::string>& unapplied_sections() {
  static const std::vector<std::string> keys = {"flm",         "ryzenai", "kokoro",  "moonshine",
                                                "onnxruntime", "vllm",    "acestep", "openmoss",
                                                "thinksound",  "trellis", "thenoise"};
  return keys;
}

// Keys of 11's llamacpp, sdcpp and whispercpp sections that are no
// setting here: each backend's own arguments, and whisper.cpp's and
// stable-diffusion.cpp's `args`.
const std::vector<std::string>& unapplied_section_keys() {
  static const std::vector<std::string> keys = {
      "llamacpp.cpu_args",   "llamacpp.rocm_args",  "llamacpp.vulkan_args", "whispercpp.args",
      "whispercpp.cpu_args", "whispercpp.npu_args", "sdcpp.args",           "sdcpp.cpu_args",
      "sdcpp.cuda_args",     "sdcpp.rocm_args",     "sdcpp.vulkan_args"};
  return keys;
}

bool listed_in(const std::vector<std::string>& list, std::string_view key) {
  return std::find(list.begin(), list.end(), key) != list.end();
}

// A section's key as our setting reads it; false to drop it.
bool translate_section_key(const std::string& path, nlohmann::json& value) {
  if (path.ends_with(".backend") && value.is_string() && value.get<std::string>() == "auto") {
    return false;
  }
  const Setting* setting = find_setting(path);
  if (setting != nullptr && setting->shape == SettingShape::kText && value.is_boolean()) {
    value = value.get<bool>() ? "true" : "false";
  }
  return true;
}

// A number's text as JSON: a whole number as an integer; nullopt when
// the text is no number.
std::optional<nlohmann::json> number_of(const std::string& text) {
  if (text.empty()) {
    return std::nullopt;
  }
  try {
    std::size_t used = 0;
    const double d = std::stod(text, &used);
    if (used != text.size()) {
      return std::nullopt;
    }
    if (d == std::floor(d) && std::fabs(d) < 9e15) {
      return nlohmann::json(static_cast<long long>(d));
    }
    return nlohmann::json(d);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// `text` as the JSON value its row's shape gives it.
nlohmann::json typed_value(const Setting& s, const std::string& text) {
  switch (s.shape) {
    case SettingShape::kInteger:
    case SettingShape::kLongInteger:
    case SettingShape::kNumber:
      return number_of(text).value_or(nlohmann::json(text));
    case SettingShape::kSwitch:
      return text == "true" || text == "1" || text == "on" || text == "yes";
    case SettingShape::kWords: {
      nlohmann::json words = nlohmann::json::array();
      std::size_t at = 0;
      while (at < text.size()) {
        const std::size_t end = std::min(text.find(' ', at), text.size());
        if (end > at) {
          const std::string word = text.substr(at, end - at);
          words.push_back(number_of(word).value_or(nlohmann::json(word)));
        }
        at = end + 1;
      }
      return words.size() == 1 ? words[0] : words;
    }
    case SettingShape::kSection: {
      auto j = nlohmann::json::parse(text, nullptr, false);
      return j.is_discarded() ? nlohmann::json(nullptr) : j;
    }
    case SettingShape::kText:
      if (s.key == "llamacpp.prefer_system" && (text == "true" || text == "false")) {
        return text == "true";
      }
      if (s.load_option == "ctx_size") {
        // 11's number; its -1 for the context fitted to memory.
        return text == "auto" ? nlohmann::json(-1) : number_of(text).value_or(nlohmann::json(text));
      }
      return text;
    case SettingShape::kList:
    case SettingShape::kOptionalValue:
      return text;
  }
  return text;
}

}  // namespace

nlohmann::json settings_as_config(const std::map<std::string, std::string>& values) {
  nlohmann::json out = nlohmann::json::object();
  for (const Setting& s : router_settings()) {
    auto it = values.find(s.key);
    if (!s.is_setting || it == values.end()) {
      continue;
    }
    nlohmann::json value = typed_value(s, it->second);
    if (const auto dot = s.key.find('.'); dot != std::string::npos) {
      out[s.key.substr(0, dot)][s.key.substr(dot + 1)] = std::move(value);
    } else {
      out[s.key] = std::move(value);
    }
  }
  return out;
}

nlohmann::json default_settings_as_config() {
  std::map<std::string, std::string> defaults;
  for (const Setting& s : router_settings()) {
    defaults[s.key] = default_text(s);
  }
  return settings_as_config(defaults);
}

Lemonade11Reading read_lemonade11_keys(const nlohmann::json& file) {
  Lemonade11Reading out;
  out.settings = nlohmann::json::object();
  if (!file.is_object()) {
    out.settings = file;
    return out;
  }
  for (const auto& [key, value] : file.items()) {
    if (listed_in(unapplied_top_level(), key)) {
      out.not_applied.push_back(key);
      continue;
    }
    if (listed_in(unapplied_sections(), key)) {
      if (value.is_object()) {
        for (const auto& [inner, unused] : value.items()) {
          std::string path = key;
          out.not_applied.push_back(path.append(".").append(inner));
        }
      } else {
        out.not_applied.push_back(key);
      }
      continue;
    }
    if (key == "global_timeout") {
      if (file.contains("request_timeout")) {
        out.not_applied.push_back(key);
      } else {
        out.settings["request_timeout"] = value;
      }
      continue;
    }
    if (key == "broadcast" && value.is_boolean()) {
      if (file.contains("no_broadcast")) {
        out.not_applied.push_back(key);
      } else {
        out.settings["no_broadcast"] = !value.get<bool>();
      }
      continue;
    }
    if (key == "ctx_size" && value.is_number_integer() && value.get<long long>() == -1) {
      out.settings[key] = "auto";  // size-to-fit: the context fitted to memory
      continue;
    }
    if (key == "log_level" && value.is_string() &&
        (value.get<std::string>() == "fatal" || value.get<std::string>() == "none")) {
      out.settings[key] = "critical";
      continue;
    }
    if ((key == "llamacpp" || key == "sdcpp" || key == "whispercpp") && value.is_object()) {
      nlohmann::json section = nlohmann::json::object();
      for (const auto& [inner, inner_value] : value.items()) {
        std::string path = key;
        path.append(".").append(inner);
        if (listed_in(unapplied_section_keys(), path)) {
          out.not_applied.push_back(path);
          continue;
        }
        nlohmann::json read = inner_value;
        if (translate_section_key(path, read)) {
          section[inner] = std::move(read);
        }
      }
      out.settings[key] = std::move(section);
      continue;
    }
    out.settings[key] = value;
  }
  return out;
}

const std::vector<std::string>& lemonade11_unapplied_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> all = unapplied_top_level();
    all.insert(all.end(), unapplied_sections().begin(), unapplied_sections().end());
    all.insert(all.end(), unapplied_section_keys().begin(), unapplied_section_keys().end());
    return all;
  }();
  return keys;
}

}  // namespace lemon
