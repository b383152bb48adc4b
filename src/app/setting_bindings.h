// How each setting reaches the options of the layer it belongs to: one
// binding a setting (a few take several settings at once, such as the key
// ring from `auth`, `api_key` and `admin_api_key`), each writing its
// layer's struct in DaemonOptions and naming the part a reload hands over.
//
// Thread-safety: the list is built once and never changes.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lemon/app/daemon_options.h"

namespace lemon {

struct SettingBinding {
  std::vector<std::string> keys;  // rows of router_settings()
  std::optional<LivePart> part;   // nullopt: only a restart changes what it writes
  std::function<Status(const SettingsRead&, DaemonOptions&)> bind;
};

// Every binding, in the order parse_config runs them (the order its
// errors come in). Each row of router_settings() is in exactly one: the
// first call throws std::logic_error when a row is bound nowhere or twice,
// or a binding names no row.
const std::vector<SettingBinding>& setting_bindings();

}  // namespace lemon
