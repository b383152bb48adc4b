#include "lemon/options/command_line.h"

#include <CLI/CLI.hpp>

#include "lemon/core/load_option_defaults.h"
#include "lemon/options/router_settings.h"

namespace lemon {
namespace {

CLI::Option* add_option(CLI::App& app, const Setting& s, SettingValues::Value& value) {
  const std::string names = s.alias.empty() ? s.flag : s.flag + "," + s.alias;
  switch (s.shape) {
    case SettingShape::kInteger:
      return app.add_option(names, std::get<int>(value), s.help);
    case SettingShape::kLongInteger:
      return app.add_option(names, std::get<long long>(value), s.help);
    case SettingShape::kNumber:
      return app.add_option(names, std::get<double>(value), s.help);
    case SettingShape::kSwitch:
      return app.add_flag(names, std::get<bool>(value), s.help);
    case SettingShape::kWords:
      return app.add_option(names, std::get<std::vector<std::string>>(value), s.help)
          ->expected(1, 5)
          ->allow_extra_args(false);
    case SettingShape::kOptionalValue:
      return app.add_option(names, std::get<std::string>(value), s.help)->expected(0, 1);
    case SettingShape::kText:
    case SettingShape::kList:
      return app.add_option(names, std::get<std::string>(value), s.help);
    case SettingShape::kSection:
      break;
  }
  return nullptr;
}

}  // namespace

std::string default_text(const Setting& setting) {
  if (setting.load_option.empty()) {
    return setting.default_value;
  }
  const nlohmann::json builtin = builtin_load_option_defaults();
  auto it = builtin.find(setting.load_option);
  if (it == builtin.end()) {
    return setting.default_value;
  }
  return it->is_string() ? it->get<std::string>() : it->dump();
}

void add_setting_options(CLI::App& app, SettingValues& values, SettingOptions which) {
  for (const Setting& s : router_settings()) {
    if (which == SettingOptions::kLoadOptions && s.load_option.empty()) {
      continue;
    }
    SettingValues::Value& value = values.reset(s, default_text(s));
    CLI::Option* opt = add_option(app, s, value);
    if (opt == nullptr) {
      continue;  // a section: config.json only
    }
    if (!s.variable.empty()) {
      opt->envname(s.variable);
    }
    if (s.check) {
      opt->check(*s.check);
    }
    if (s.show_default) {
      opt->capture_default_str();
    }
    if (!s.is_setting) {
      opt->group("");
    }
  }
}

}  // namespace lemon
