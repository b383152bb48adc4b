// The table of settings: keys and variables follow from the flags (but for
// Lemonade's sectioned keys), the load options are the ten a model takes
// too, at their built-in defaults, and values convert in range.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "lemon/core/load_option_defaults.h"
#include "lemon/options/command_line.h"
#include "lemon/options/router_settings.h"

namespace lemon {
namespace {

using namespace std::chrono_literals;

TEST(RouterSettings, KeysAndVariablesFollowTheFlags) {
  std::set<std::string> keys;
  for (const Setting& s : router_settings()) {
    EXPECT_TRUE(keys.insert(s.key).second) << "two rows for " << s.key;
    if (s.shape == SettingShape::kSection) {
      EXPECT_TRUE(s.flag.empty()) << s.key;
      EXPECT_TRUE(s.variable.empty()) << s.key;
      continue;
    }
    ASSERT_TRUE(s.flag.starts_with("--")) << s.flag;
    std::string name = s.flag.substr(2);
    std::string variable = "LEMONADE_";
    for (char c : name) {
      variable += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    if (!s.is_setting) {
      EXPECT_TRUE(s.variable.empty()) << s.flag;
      continue;
    }
    EXPECT_EQ(s.variable, variable);
    if (s.key.find('.') == std::string::npos) {
      std::replace(name.begin(), name.end(), '-', '_');
      // The one exception: config.json's models_dir is Lemonade 11's model
      // cache, while --models-dir is llama-server's --extra-models-dir.
      EXPECT_EQ(s.key, name == "models_cache_dir" ? "models_dir" : name);
    }
  }
}

TEST(RouterSettings, TheLoadOptionsAreAModelsAtTheirBuiltInDefaults) {
  CLI::App app;
  SettingValues values;
  add_setting_options(app, values, SettingOptions::kLoadOptions);
  std::set<std::string> recipe_keys;
  for (const Setting& s : router_settings()) {
    if (!s.load_option.empty()) {
      recipe_keys.insert(s.load_option);
      EXPECT_NE(app.get_option_no_throw(s.flag), nullptr) << s.flag;
    } else if (!s.flag.empty()) {
      EXPECT_EQ(app.get_option_no_throw(s.flag), nullptr) << s.flag;
    }
  }
  const nlohmann::json builtin = builtin_load_option_defaults();
  std::set<std::string> builtin_keys;
  for (const auto& [key, value] : builtin.items()) {
    builtin_keys.insert(key);
  }
  EXPECT_EQ(recipe_keys, builtin_keys);
  EXPECT_EQ(values.text("ctx_size"), builtin["ctx_size"].dump());
  EXPECT_EQ(values.text("llamacpp.backend"), builtin["llamacpp_backend"].get<std::string>());
  EXPECT_DOUBLE_EQ(values.number("sdcpp.cfg_scale"), builtin["cfg_scale"].get<double>());
}

TEST(SettingValues, ValuesConvertInRange) {
  SettingValues values;
  const Setting& seconds = *find_setting("scale_up_after");
  values.reset(seconds, "0.25");
  EXPECT_EQ(values.duration("scale_up_after"), 250ms);
  values.reset(seconds, "1e300");
  EXPECT_EQ(values.duration("scale_up_after"), std::chrono::milliseconds(1'000'000'000'000'000));
  values.reset(seconds, "-3");
  EXPECT_EQ(values.duration("scale_up_after"), 0ms);
  values.reset(*find_setting("memory_margin"), "2");
  EXPECT_EQ(values.mebibytes("memory_margin"), 2 << 20);
  values.reset(*find_setting("cors_origins"), " http://a/ ,, \t,http://b");
  EXPECT_EQ(values.list("cors_origins", "/"), (std::vector<std::string>{"http://a", "http://b"}));
  EXPECT_EQ(values.list("cors_origins"), (std::vector<std::string>{"http://a/", "http://b"}));
}

}  // namespace
}  // namespace lemon
