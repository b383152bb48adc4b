#include "lemon/models/llamacpp_preset_file.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "lemon/core/text.h"
#include "lemon/models/llama_server_options.h"

namespace lemon {
namespace {

Error at_line(const std::string& file, int line, const std::string& what) {
  return Error(ErrorCode::kInvalidOption, file + ":" + std::to_string(line) + ": " + what);
}

bool key_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}
bool key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-';
}

std::string ini_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

// The options the router sets for every llama-server it starts (or that
// belong to llama-server's own router): a preset may not set them.
const std::map<std::string, std::string>& router_owned() {
  static const std::map<std::string, std::string> owned = {
      {"--port", "the router picks each server's port"},
      {"--host", "servers listen on 127.0.0.1 only"},
      {"--api-key", "each server gets a key of its own"},
      {"--api-key-file", "each server gets a key of its own"},
      {"--ssl-key-file", "TLS is the router's listener's"},
      {"--ssl-cert-file", "TLS is the router's listener's"},
      {"--gpu-layers",
       "every layer goes to the GPU of a GPU backend and none with the CPU one; choose the "
       "backend with llamacpp_backend (--llamacpp)"},
      {"--mmproj", "a model's mmproj file is found beside it (a --models-dir subfolder)"},
      {"--mmproj-url", "a model's mmproj file is found beside it"},
      {"--mmproj-auto", "a model's mmproj file is found beside it"},
      {"--mmproj-offload", "the router offloads the mmproj with the model"},
      {"--embedding", "the model's type decides it"},
      {"--rerank", "the model's type decides it"},
      {"--kv-unified", "each slot gets ctx-size tokens of its own"},
      {"--model-url", "give model or hf-repo"},
      {"--docker-repo", "give model or hf-repo"},
      {"--hf-file", "give hf-repo as org/repo:TAG"},
      {"--models-dir", "a setting of the router (--models-dir), not of a preset"},
      {"--models-preset", "a setting of the router, not of a preset"},
      {"--models-max", "a setting of the router (--max-loaded-models), not of a preset"},
      {"--models-autoload", "a setting of the router (--no-models-autoload), not of a preset"},
  };
  return owned;
}

std::optional<bool> truth(std::string_view value) {
  const std::string v = ini_upper(value);
  if (v == "ON" || v == "ENABLED" || v == "TRUE" || v == "1") {
    return true;
  }
  if (v == "OFF" || v == "DISABLED" || v == "FALSE" || v == "0") {
    return false;
  }
  return std::nullopt;
}

std::vector<std::string> comma_list(std::string_view value) {
  std::vector<std::string> out;
  for (std::string_view piece : split(value, ',')) {
    auto item = trim_whitespace(piece);
    if (!item.empty()) {
      out.emplace_back(item);
    }
  }
  return out;
}

// A value for llamacpp_args (split like a shell's words).
std::string quoted(const std::string& value) {
  if (!value.empty() && value.find_first_of(" \t\"'\\") == std::string::npos) {
    return value;
  }
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  return out + "\"";
}

// One key of a section, understood.
struct Setting {
  std::string name;  // how the rendered preset names it (long form, no dashes)
  std::string value;
  int line = 0;
  const LlamaServerOption* option = nullptr;  // null for preset-only keys
  bool negated = false;
};

Result<Setting> understand(const IniEntry& e, const std::string& file) {
  static const std::set<std::string> kPresetOnly = {"load-on-startup", "stop-timeout",
                                                    "dedup-cache-models"};
  if (kPresetOnly.contains(e.key)) {
    return Setting{e.key, e.value, e.line, nullptr, false};
  }
  auto match = find_llama_server_option(e.key);
  if (!match) {
    return at_line(file, e.line, "'" + e.key + "' is not a llama-server option");
  }
  const std::string flag = match->option->flag();
  if (auto owned = router_owned().find(flag); owned != router_owned().end()) {
    return at_line(file, e.line,
                   "'" + e.key + "' (" + flag + ") is set by the router: " + owned->second);
  }
  return Setting{flag.substr(2), e.value, e.line, match->option, match->negated};
}

Result<int> positive(const Setting& s, const std::string& file) {
  int n = 0;
  std::istringstream in(s.value);
  if (!(in >> n) || !in.eof() || n < 1) {
    return at_line(file, s.line, "'" + s.name + "' must be a whole number of at least 1");
  }
  return n;
}

// One preset from its section's settings ([*] merged under them).
Result<IniPreset> make_preset(const std::string& id, const std::map<std::string, Setting>& settings,
                              const std::string& file) {
  IniPreset out;
  out.preset.id = id;
  out.preset.model = id;  // a model of the catalogue or the hub, unless named below
  nlohmann::json load = nlohmann::json::object();
  std::vector<std::string> args;
  std::string text = "[" + id + "]\n";
  bool has_model = false;
  for (const auto& [key, s] : settings) {
    text += s.name + " = " + s.value + "\n";
    if (s.option == nullptr) {
      if (s.name == "stop-timeout") {
        auto n = positive(s, file);
        if (!n.ok()) {
          return std::move(n).error();
        }
        out.stop_timeout_s = *n;
        continue;
      }
      auto flag = truth(s.value);
      if (!flag) {
        return at_line(file, s.line, "'" + s.name + "' must be true or false");
      }
      (s.name == "load-on-startup" ? out.load_on_startup : out.dedup_cache_models) = *flag;
      continue;
    }
    const std::string flag = s.option->flag();
    if (flag == "--model" || flag == "--hf-repo") {
      if (has_model) {
        return at_line(file, s.line, "give either model or hf-repo");
      }
      has_model = true;
      out.preset.model = s.value;
      if (flag == "--model" && !s.value.starts_with('/')) {
        return at_line(file, s.line, "'model' must be an absolute path to a .gguf file");
      }
      continue;
    }
    if (flag == "--ctx-size" || flag == "--parallel") {
      auto n = positive(s, file);
      if (!n.ok()) {
        return std::move(n).error();
      }
      load[flag == "--ctx-size" ? "ctx_size" : "parallel"] = *n;
      continue;
    }
    if (flag == "--alias" || flag == "--tags") {
      (flag == "--alias" ? out.aliases : out.tags) = comma_list(s.value);
      continue;
    }
    if (s.option->takes == OptionTakes::kNothing) {
      auto on = truth(s.value);
      if (!on) {
        return at_line(file, s.line, "'" + s.name + "' is a flag: true or false");
      }
      const bool wanted = *on != s.negated;
      if (wanted) {
        args.push_back(flag);
      } else if (!s.option->negative_flag().empty()) {
        args.push_back(s.option->negative_flag());
      }
      continue;
    }
    args.push_back(flag);
    if (!s.value.empty() || s.option->takes == OptionTakes::kValue) {
      args.push_back(quoted(s.value));
    }
  }
  if (!args.empty()) {
    load["llamacpp_args"] = join(args, " ");
  }
  auto options = RecipeOptions::from_json("llamacpp", load);
  if (!options.ok()) {
    return Error(ErrorCode::kInvalidOption, file + ": [" + id + "]: " + options.error().message());
  }
  out.preset.load_options = std::move(options).value();
  out.text = text + "\n";
  return out;
}

}  // namespace

Result<std::vector<IniSection>> parse_ini(std::string_view text, const std::string& file) {
  std::vector<IniSection> sections;
  std::map<std::string, std::size_t> index;
  std::size_t current = std::string::npos;
  auto section = [&](const std::string& name, int line) {
    auto it = index.find(name);
    if (it == index.end()) {
      index[name] = sections.size();
      sections.push_back({name, line, {}});
      return sections.size() - 1;
    }
    sections[it->second].entries.clear();  // named again: starts over
    sections[it->second].line = line;
    return it->second;
  };
  int number = 0;
  while (!text.empty()) {
    ++number;
    auto end = text.find_first_of("\r\n");
    std::string_view raw = text.substr(0, end);
    if (end == std::string_view::npos) {
      text = {};
    } else {
      const bool crlf = text[end] == '\r' && end + 1 < text.size() && text[end + 1] == '\n';
      text.remove_prefix(end + (crlf ? 2 : 1));
    }
    std::string_view line = trim_whitespace(raw);
    if (line.empty() || line.front() == ';' || line.front() == '#') {
      continue;
    }
    if (line.front() == '[') {
      auto close = line.find(']');
      if (close == std::string_view::npos || close == 1 ||
          !trim_whitespace(line.substr(close + 1)).empty()) {
        return at_line(file, number, "a section header is '[name]'");
      }
      current = section(std::string(line.substr(1, close - 1)), number);
      continue;
    }
    auto eq = line.find('=');
    std::string_view key =
        eq == std::string_view::npos ? line : trim_whitespace(line.substr(0, eq));
    if (eq == std::string_view::npos || key.empty() || !key_start(key.front()) ||
        !std::all_of(key.begin(), key.end(), key_char)) {
      return at_line(file, number, "expected 'key = value', a [section] or a comment");
    }
    std::string_view value = line.substr(eq + 1);
    value = trim_whitespace(value.substr(0, value.find_first_of(";#")));
    if (current == std::string::npos) {
      current = section("default", 0);
    }
    sections[current].entries.push_back({std::string(key), std::string(value), number});
  }
  return sections;
}

std::string canonical_section_name(std::string_view name) {
  const auto colon = name.rfind(':');
  if (colon == std::string_view::npos) {
    return std::string(name);
  }
  std::string_view tag = name.substr(colon + 1);
  const auto sep = tag.find_last_of("-.");
  if (sep != std::string_view::npos) {
    tag = tag.substr(sep + 1);
  }
  return std::string(name.substr(0, colon + 1)) + ini_upper(tag);
}

Result<std::vector<IniPreset>> parse_llamacpp_presets(std::string_view text,
                                                      const std::string& file) {
  auto sections = parse_ini(text, file);
  if (!sections.ok()) {
    return std::move(sections).error();
  }
  // Each key understood once, by the option it names (so "c" and
  // "ctx-size" are one setting; the later line wins).
  auto settings_of = [&file](const IniSection& s) -> Result<std::map<std::string, Setting>> {
    std::map<std::string, Setting> out;
    for (const auto& e : s.entries) {
      if (e.key == "version") {
        continue;
      }
      auto understood = understand(e, file);
      if (!understood.ok()) {
        return std::move(understood).error();
      }
      std::string name = understood->name;
      out[name] = std::move(understood).value();
    }
    return out;
  };
  std::map<std::string, Setting> globals;
  for (const auto& s : *sections) {
    if (s.name == "*") {
      auto g = settings_of(s);
      if (!g.ok()) {
        return std::move(g).error();
      }
      globals = std::move(g).value();
    }
  }
  std::vector<IniPreset> out;
  std::set<std::string> names;
  for (const auto& s : *sections) {
    if (s.name == "*") {
      continue;
    }
    auto mine = settings_of(s);
    if (!mine.ok()) {
      return std::move(mine).error();
    }
    if (s.name == "default" && mine->empty()) {
      continue;  // only `version` before the first section
    }
    std::map<std::string, Setting> merged = globals;
    for (auto& [key, setting] : *mine) {
      merged[key] = std::move(setting);
    }
    const std::string id = canonical_section_name(s.name);
    if (!names.insert(id).second) {
      return at_line(file, s.line, "section [" + id + "] is named twice");
    }
    auto preset = make_preset(id, merged, file);
    if (!preset.ok()) {
      return std::move(preset).error();
    }
    out.push_back(std::move(preset).value());
  }
  for (const auto& p : out) {
    for (const auto& alias : p.aliases) {
      if (names.contains(alias)) {
        std::string what = file;
        what.append(": alias '").append(alias).append("' of [").append(p.preset.id);
        return Error(ErrorCode::kInvalidOption, what + "] is another preset's name");
      }
    }
  }
  return out;
}

Result<std::vector<IniPreset>> read_llamacpp_preset_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Error(ErrorCode::kInvalidOption, "preset file " + path + " cannot be read");
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse_llamacpp_presets(text.str(), path);
}

}  // namespace lemon
