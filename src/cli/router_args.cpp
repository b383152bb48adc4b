#include "lemon/cli/router_args.h"

#include <algorithm>

#include <CLI/CLI.hpp>

#include "lemon/options/router_settings.h"

namespace lemon::cli {

bool option_given(const std::vector<std::string>& tokens, const std::string& name) {
  const std::string flag = "--" + name;
  return std::any_of(tokens.begin(), tokens.end(), [&flag](const std::string& t) {
    return t == flag || t.starts_with(flag + "=");
  });
}

std::vector<std::string> router_args_of(const CLI::App& sub, const std::vector<std::string>& tokens,
                                        const std::set<std::string>& skip) {
  std::vector<std::string> args;
  for (const CLI::Option* opt : sub.get_options()) {
    if (opt->get_lnames().empty()) {
      continue;
    }
    const std::string& name = opt->get_lnames().front();
    // Given under any of its names (--models-dir for --extra-models-dir).
    const auto& names = opt->get_lnames();
    if (skip.count(name) != 0 ||
        std::none_of(names.begin(), names.end(),
                     [&tokens](const std::string& n) { return option_given(tokens, n); })) {
      continue;
    }
    if (opt->get_type_size() == 0) {  // a flag
      args.push_back("--" + name);
    } else if (opt->results().size() == 1) {
      args.push_back("--" + name + "=" + opt->results().front());
    } else {
      args.push_back("--" + name);
      args.insert(args.end(), opt->results().begin(), opt->results().end());
    }
  }
  return args;
}

nlohmann::json load_options_of(const CLI::App& sub, const std::vector<std::string>& tokens) {
  nlohmann::json out = nlohmann::json::object();
  for (const Setting& s : router_settings()) {
    if (s.load_option.empty()) {
      continue;
    }
    const CLI::Option* opt = sub.get_option_no_throw(s.flag);
    if (opt == nullptr || !option_given(tokens, s.flag.substr(2)) || opt->results().empty()) {
      continue;
    }
    const std::string& raw = opt->results().front();
    nlohmann::json number = nlohmann::json::parse(raw, nullptr, false);
    const bool numeric = s.shape == SettingShape::kInteger || s.shape == SettingShape::kNumber ||
                         s.load_option == "ctx_size";  // a number, or "auto"
    out[s.load_option] = numeric && number.is_number() ? number : nlohmann::json(raw);
  }
  return out;
}

}  // namespace lemon::cli
