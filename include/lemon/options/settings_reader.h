// Reading lemonade-router's settings, lowest first: the defaults, the
// distribution's defaults file, config.json, the LEMONADE_* variables, the
// flags (config_file.h). The read checks every setting as its row says
// (router_settings.h), the `auth` section and its keys (auth/api_keys.h),
// and the rule for addresses others reach: a router that listens beyond
// loopback needs an API key or --allow-unauthenticated. lemonade-router
// reads its settings here and then hands each layer its options
// (app/daemon_options.h); lemonade-server checks a config.json it writes
// here, without a router.
//
// Thread-safety: plain functions; a read reads the environment and files.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/options/setting.h"

namespace lemon {

// Each setting's value as text, as given or defaulted (a reload compares
// them), and where it came from: "default", "defaults file",
// "config.json", "environment" or "flag" (GET /internal/config).
struct SettingsProvenance {
  std::map<std::string, std::string> values;
  std::map<std::string, std::string> sources;
  std::string config_file;  // the config.json read (it may not exist)
  // The other config.json, when both places hold one (locate_config_file()).
  std::string ignored_config_file;
  // Lemonade 11's keys the files held that nothing here applies
  // (lemonade11_config.h), dotted, in the order read.
  std::vector<std::string> not_applied;
};

// The settings read, or a request to exit: help, the version or the
// settings' table was printed (exit code 0), or the input is invalid (a
// one-line message and exit code 2).
struct SettingsRead {
  SettingValues values;
  SettingsProvenance provenance;
  bool exit_now = false;
  int exit_code = 0;
  std::string message;  // the one-line error for exit code 2
  std::string param;    // the config.json key it is about, when it names one
};

// An argv for `args` (args[0] is the program), null-terminated; it points
// into `args`, which must outlive it.
std::vector<const char*> argv_of(const std::vector<std::string>& args);

// Reads argv, the environment and the files. Never exits the process
// itself. `config_json`, when given, stands for config.json's content (a
// change is checked before it is written).
SettingsRead read_router_settings(int argc, const char* const* argv,
                                  const std::optional<nlohmann::json>& config_json = std::nullopt);
// The same over a command line held as strings (args[0] is the program).
SettingsRead read_router_settings(const std::vector<std::string>& args,
                                  const std::optional<nlohmann::json>& config_json = std::nullopt);

// `message` on one line: a control character it quotes from a file (a key
// such as "back\nd") is written as its JSON escape.
std::string one_line(std::string_view message);

}  // namespace lemon
