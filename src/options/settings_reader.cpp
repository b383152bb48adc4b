#include "lemon/options/settings_reader.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "lemon/auth/api_keys.h"
#include "lemon/options/command_line.h"
#include "lemon/options/config_file.h"
#include "lemon/options/lemonade11_config.h"
#include "lemon/options/router_settings.h"

namespace lemon {
namespace {

SettingsRead refused(std::string_view message, std::string param = "") {
  SettingsRead read;
  read.exit_now = true;
  read.exit_code = 2;
  read.message = one_line(message);
  read.param = std::move(param);
  return read;
}

// docs/configuration.md's table, from the table of settings (a test keeps
// the page and this in step).
void print_settings_markdown() {
  auto cell = [](const std::string& text) {
    std::string out;
    for (char ch : text) {
      out += ch == '|' ? std::string("\\|") : std::string(1, ch);
    }
    return out;
  };
  std::cout << "| key | flag | variable | a reload | what |\n|---|---|---|---|---|\n";
  for (const Setting& s : router_settings()) {
    if (s.flag.empty() || !s.is_setting) {
      continue;
    }
    std::cout << "| `" << s.key << "` | `" << s.flag << "` | `" << s.variable << "` | "
              << (s.live ? "applies it" : "restart") << " | " << cell(s.help) << " |\n";
  }
}

// 127.0.0.0/8, ::1 and localhost: only this machine reaches them.
bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

// The defaults file, then config.json, under the variables and flags: each
// one's settings become their options' defaults.
Status apply_files(CLI::App& app, const std::optional<nlohmann::json>& config_json,
                   SettingsRead& read) {
  for (const auto& [file, origin] :
       {std::pair{distro_defaults_file(), std::string("defaults file")},
        std::pair{std::filesystem::path(read.provenance.config_file),
                  std::string("config.json")}}) {
    auto raw = config_json && origin == "config.json" ? Result<nlohmann::json>(*config_json)
                                                      : read_config_file(file);
    if (!raw.ok()) {
      return std::move(raw).error();
    }
    Lemonade11Reading lemonade11 = read_lemonade11_keys(*raw);
    for (auto& key : lemonade11.not_applied) {
      if (std::find(read.provenance.not_applied.begin(), read.provenance.not_applied.end(), key) ==
          read.provenance.not_applied.end()) {
        read.provenance.not_applied.push_back(std::move(key));
      }
    }
    const nlohmann::json* values = &lemonade11.settings;
    auto& sources = read.provenance.sources;
    for (const Setting& s : router_settings()) {
      if (s.shape != SettingShape::kSection) {
        continue;
      }
      if (auto it = values->find(s.key); it != values->end() && !it->is_null()) {
        read.values.set_section(s.key, *it);  // a later file's wins
        sources[s.key] = origin;
      }
    }
    if (Status applied = apply_config_file(app, *values, file.string(), sources); !applied.ok()) {
      return applied;
    }
    for (auto& [key, from] : sources) {
      if (from == file.string()) {
        from = origin;
      }
    }
  }
  return ok_status();
}

// Each setting's value as text and its source, once the flags are parsed.
void note_provenance(const CLI::App& app, int argc, const char* const* argv,
                     const SettingValues& values, SettingsProvenance& provenance) {
  for (const CLI::Option* opt : app.get_options()) {
    const std::string key = config_key_of_flag(opt->get_name());
    if (key.empty()) {
      continue;
    }
    std::string value;
    if (opt->count() > 0) {
      for (const auto& r : opt->results()) {
        value += (value.empty() ? "" : " ") + r;
      }
    } else {
      value = opt->get_default_str();
    }
    provenance.values[key] = value;
    if (opt->count() > 0) {
      bool on_command_line = false;
      for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        on_command_line =
            on_command_line || arg == opt->get_name() || arg.starts_with(opt->get_name() + "=");
      }
      provenance.sources[key] = on_command_line ? "flag" : "environment";
    } else if (!provenance.sources.contains(key)) {
      provenance.sources[key] = "default";
    }
  }
  for (const Setting& s : router_settings()) {
    if (s.shape == SettingShape::kSection) {
      provenance.values[s.key] = values.section(s.key).dump();
      provenance.sources.try_emplace(s.key, "default");
    }
  }
}

// The `auth` section and the key variables make a valid key ring, and an
// address others reach is not left open by mistake.
Status check_access(const SettingValues& values, const SettingsProvenance& provenance) {
  auto keys = auth::build_key_ring(values.section("auth"), values.text("api_key"),
                                   values.text("admin_api_key"));
  if (!keys.ok()) {
    return Error(keys.error().code(),
                 provenance.sources.at("auth") + ": " + keys.error().message());
  }
  const std::string& host = values.text("host");
  if (!is_loopback_host(host) && keys->empty() && !values.on("allow_unauthenticated")) {
    return Error(ErrorCode::kInvalidRequest,
                 "refusing to listen on " + host +
                     " without an API key: set --api-key (LEMONADE_API_KEY) or auth.keys in "
                     "config.json, or pass --allow-unauthenticated to let anyone who reaches it "
                     "use it");
  }
  return ok_status();
}

}  // namespace

std::string one_line(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (char ch : message) {
    if (static_cast<unsigned char>(ch) < 0x20) {
      const std::string quoted = nlohmann::json(std::string(1, ch)).dump();
      out.append(quoted, 1, quoted.size() - 2);  // without the quotes
    } else {
      out += ch;
    }
  }
  return out;
}

SettingsRead read_router_settings(int argc, const char* const* argv,
                                  const std::optional<nlohmann::json>& config_json) {
  SettingsRead read;
  CLI::App app("lemonade-router: serves local AI models behind one OpenAI-compatible API",
               "lemonade-router");
  app.set_version_flag("-v,--version", std::string("lemonade-router ") + LEMON_ROUTER_VERSION +
                                           " (Lemonade API " + LEMON_API_VERSION + ")");
  add_setting_options(app, read.values);
  bool settings_markdown = false;
  app.add_flag("--settings-markdown", settings_markdown,
               "Print the table of settings (docs/configuration.md) and exit")
      ->group("");

  const ConfigFileLocation location = locate_config_file();
  read.provenance.config_file = location.file.string();
  read.provenance.ignored_config_file = location.ignored.string();
  if (Status files = apply_files(app, config_json, read); !files.ok()) {
    return refused(files.error().message(), files.error().param());
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    read.exit_now = true;
    return read;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    read.exit_now = true;
    return read;
  } catch (const CLI::CallForVersion&) {
    std::cout << app.version() << "\n";
    read.exit_now = true;
    return read;
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    return refused(what);
  }
  if (settings_markdown) {
    print_settings_markdown();
    read.exit_now = true;
    return read;
  }
  note_provenance(app, argc, argv, read.values, read.provenance);
  if (Status access = check_access(read.values, read.provenance); !access.ok()) {
    return refused(access.error().message());
  }
  return read;
}

std::vector<const char*> argv_of(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  argv.reserve(args.size() + 1);
  for (const auto& a : args) {
    argv.push_back(a.c_str());
  }
  argv.push_back(nullptr);
  return argv;
}

SettingsRead read_router_settings(const std::vector<std::string>& args,
                                  const std::optional<nlohmann::json>& config_json) {
  const std::vector<const char*> argv = argv_of(args);
  return read_router_settings(static_cast<int>(args.size()), argv.data(), config_json);
}

}  // namespace lemon
