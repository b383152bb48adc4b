// lemond: Lemonade 11's name and command line for lemonade-router.
#include "lemon/cli/lemond.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include <CLI/CLI.hpp>

#include "lemon/cli/router_args.h"
#include "lemon/cli/router_launcher.h"
#include "lemon/core/atomic_file.h"
#include "lemon/options/command_line.h"
#include "lemon/options/config_file.h"
#include "lemon/options/settings_reader.h"

namespace lemon::cli {

namespace fs = std::filesystem;

fs::path lemond_config_file() {
  const ConfigFileLocation where = locate_config_file();
  std::error_code ec;
  if (fs::exists(where.file, ec)) {
    return where.file;
  }
  return lemonade_cache_dir() / "config.json";
}

Status save_listen_settings(const fs::path& file, std::optional<int> port,
                            const std::optional<std::string>& host) {
  auto current = read_json_object_for_update(file);
  if (!current.ok()) {
    return current.error();
  }
  nlohmann::ordered_json merged = *current;
  if (port) {
    merged["port"] = *port;
  }
  if (host) {
    merged["host"] = *host;
  }
  const SettingsRead checked =
      read_router_settings({"lemonade-router"}, nlohmann::json::parse(merged.dump()));
  if (checked.exit_now) {
    return Error(ErrorCode::kInvalidRequest, checked.message);
  }
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  return write_file_atomically(file, merged.dump(2) + "\n");
}

int run_lemond(int argc, char** argv) {
  CLI::App app("lemond - Lemonade 11's name for lemonade-router: starts the server", "lemond");
  app.set_version_flag("-v,--version", std::string("lemond version ") + LEMON_ROUTER_VERSION +
                                           " (lemonade-router; Lemonade API " + LEMON_API_VERSION +
                                           ")");
  // Every router option, as lemonade-server serve takes them; --port and
  // --host are lemond's own (saved), the others are passed on as given.
  SettingValues values;
  add_setting_options(app, values);
  for (const char* own : {"--port", "--host"}) {
    app.remove_option(app.get_option(own));
  }
  std::string cache_dir;
  std::optional<int> port;
  std::optional<std::string> host;
  bool broadcast = false;
  app.add_option("cache_dir", cache_dir,
                 "Folder of config.json and the cache (default: LEMONADE_CACHE_DIR, else "
                 "~/.cache/lemonade)")
      ->type_name("DIR");
  app.add_option("--port", port, "Port to listen on; saved to config.json")
      ->check(CLI::Range(0, 65535));
  app.add_option("--host", host, "Address to listen on; saved to config.json");
  app.add_flag("--broadcast", broadcast,
               "Send the loopback beacon even if config.json says broadcast: false (this run "
               "only)")
      ->excludes(app.get_option("--no-broadcast"));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  const std::vector<std::string> tokens(argv + 1, argv + argc);
  if (!cache_dir.empty()) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(cache_dir, ec);
    ::setenv("LEMONADE_CACHE_DIR", (ec ? fs::path(cache_dir) : absolute).c_str(), 1);
  }
  if (port || host) {
    const fs::path file = lemond_config_file();
    if (Status saved = save_listen_settings(file, port, host); !saved.ok()) {
      std::cerr << "lemond: cannot save to " << file.string() << ": " << saved.error().message()
                << std::endl;
      return 1;
    }
    if (port) {
      std::cerr << "lemond: persisted port=" << *port << " to " << file.string() << std::endl;
    }
    if (host) {
      std::cerr << "lemond: persisted host=" << *host << " to " << file.string() << std::endl;
    }
  }
  if (broadcast) {
    ::setenv("LEMONADE_NO_BROADCAST", "false", 1);  // below a flag, above config.json
  }
  const std::string router = find_router_binary();
  if (router.empty()) {
    std::cerr << "lemond: lemonade-router was found neither beside lemond nor on PATH" << std::endl;
    return 1;
  }
  std::vector<std::string> args = {router};
  // Saved, and given to this run too: a flag beats LEMONADE_PORT/_HOST.
  for (std::string& arg : router_args_of(app, tokens, {"broadcast", "help", "version"})) {
    args.push_back(std::move(arg));
  }
  std::vector<const char*> router_argv = argv_of(args);
  ::execv(router.c_str(), const_cast<char* const*>(router_argv.data()));
  std::cerr << "lemond: cannot run " << router << ": " << std::strerror(errno) << std::endl;
  return 1;
}

}  // namespace lemon::cli
