// The router's settings as CLI11 options: each row of router_settings()
// with a flag becomes one option of its shape, with its variable, check,
// default and help, bound to its value in a SettingValues. lemonade-router
// reads its settings through them (settings_reader.h); lemonade-server's
// `serve` and `run` add all of them and `load` the load options, and pass
// the ones given on to the router.
//
// Thread-safety: register and parse on one thread.
#pragma once

#include <cstdint>
#include <string>

#include "lemon/options/setting.h"

namespace CLI {
class App;
}

namespace lemon {

enum class SettingOptions : std::uint8_t {
  kAll,          // every setting with a flag, and --ready-fd
  kLoadOptions,  // --ctx-size, --parallel, --llamacpp, ... (Setting::load_option)
};

// Adds the options to `app`, each at its default and bound to its value in
// `values`, which must outlive the parse. With kAll, config.json's
// sections get their empty value in `values` too.
void add_setting_options(CLI::App& app, SettingValues& values,
                         SettingOptions which = SettingOptions::kAll);

// A setting's default as text: its row's, or a load option's built-in one.
std::string default_text(const Setting& setting);

}  // namespace lemon
