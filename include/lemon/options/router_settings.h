// The router's settings, in one table: every flag Lemonade 9.4.1's
// `lemonade-server` passes to its router, and ours. From it come
// lemonade-router's options and their LEMONADE_* variables (command_line.h),
// config.json's keys (config_file.h), GET /internal/config's view, which
// settings a reload applies, and docs/configuration.md's table
// (`lemonade-router --settings-markdown`); lemonade-server's `serve`, `run`
// and `load` take the same options, so their help, checks and pass-through
// to the router never drift apart.
//
// A key is its flag without the dashes, '_' for '-' (`--keep-alive` is
// `keep_alive`), except the backend options Lemonade keeps in sections:
// `llamacpp.{backend,args}`, `sdcpp.{backend,steps,cfg_scale,width,
// height}`, `whispercpp.backend`. A variable is LEMONADE_ and the flag's
// name in capitals, '_' for '-' (`LEMONADE_KEEP_ALIVE`,
// `LEMONADE_LLAMACPP`).
//
// Thread-safety: the table is built once and never changes.
#pragma once

#include <string>
#include <vector>

#include "lemon/options/setting.h"

namespace lemon {

// In the order of --help and docs/configuration.md: the load options
// first, then the others, then config.json's sections (auth, profiles,
// remote, remote_discovery), which have no flag.
const std::vector<Setting>& router_settings();

// The row of `key`, or nullptr.
const Setting* find_setting(std::string_view key);

}  // namespace lemon
