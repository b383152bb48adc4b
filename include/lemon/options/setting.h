// Setting: one row of the router's table of settings (router_settings.h):
// its flag, its LEMONADE_* variable and its config.json key, the shape of
// its value, its default, its check and its help, whether a reload applies
// it. SettingValues: every setting's value as read, in the type its shape
// gives. Nothing here knows which layer's options a setting becomes: app
// binds each one into its layer's struct (app/daemon_options.h).
//
// Thread-safety: values; fill and read a SettingValues on one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace CLI {
class Validator;
}

namespace lemon {

// How a setting's value is written, and what it is held as.
enum class SettingShape : std::uint8_t {
  kInteger,        // int
  kLongInteger,    // long long
  kNumber,         // double
  kText,           // std::string
  kList,           // std::string, comma-separated; config.json may give a list of strings
  kSwitch,         // bool: a flag without a value
  kWords,          // 1 to 5 words (--max-loaded-models); config.json: a number or a list
  kOptionalValue,  // std::string: a flag whose value may be left out; "off" when not given
  kSection,        // config.json only: a JSON value read whole (auth, profiles, remote)
};

// What a kNumber counts.
enum class SettingUnit : std::uint8_t { kNone, kSeconds, kMebibytes };

struct Setting {
  std::string key;       // config.json's key and GET /internal/config's ("llamacpp.args")
  std::string flag;      // "--llamacpp-args"; "" for a section
  std::string alias;     // another name of the flag ("--models-dir", llama-server's); "" for none
  std::string variable;  // "LEMONADE_LLAMACPP_ARGS"; "" for none
  SettingShape shape = SettingShape::kText;
  SettingUnit unit = SettingUnit::kNone;
  std::string default_value;  // as text; a load option's comes from load_option_defaults.h
  std::string help;
  std::shared_ptr<const CLI::Validator> check;  // null: any value of the shape
  bool show_default = true;                     // --help shows the default
  bool live = false;                            // a reload applies it to a running router
  // false for a flag that is no setting (--ready-fd, for launchers): no
  // key in config.json, no variable, hidden from --help.
  bool is_setting = true;
  // A load option's key in RecipeOptions and POST /load ("ctx_size",
  // "sd-cpp_backend"), "" for other settings.
  std::string load_option;
};

// Each setting's value, as the table's options and config.json left it.
// Values live in nodes that never move, so a CLI11 option may be bound to
// one (command_line.h); copies are not bound.
class SettingValues {
 public:
  using Value = std::variant<int, long long, double, bool, std::string, std::vector<std::string>,
                             nlohmann::json>;

  // Sets `setting` to `text` read as its shape (a section's text is JSON);
  // returns the value, which stays where it is.
  Value& reset(const Setting& setting, const std::string& text);
  // A section's value as config.json gave it.
  void set_section(const std::string& key, nlohmann::json value);

  bool has(std::string_view key) const { return values_.contains(key); }
  int integer(std::string_view key) const { return std::get<int>(at(key)); }
  long long long_integer(std::string_view key) const { return std::get<long long>(at(key)); }
  double number(std::string_view key) const { return std::get<double>(at(key)); }
  bool on(std::string_view key) const { return std::get<bool>(at(key)); }
  const std::string& text(std::string_view key) const { return std::get<std::string>(at(key)); }
  const std::vector<std::string>& words(std::string_view key) const {
    return std::get<std::vector<std::string>>(at(key));
  }
  const nlohmann::json& section(std::string_view key) const {
    return std::get<nlohmann::json>(at(key));
  }
  // A number of seconds, in range: past 1e12 s it is the largest, never an
  // overflow; negatives are 0.
  std::chrono::milliseconds duration(std::string_view key) const;
  // A number of MiB as bytes, in range the same way.
  std::int64_t mebibytes(std::string_view key) const;
  // A kList's comma-separated items, without the spaces and tabs around
  // them (and any of `trim_end` at their end); items of spaces and tabs
  // only are left out.
  std::vector<std::string> list(std::string_view key, std::string_view trim_end = "") const;

 private:
  const Value& at(std::string_view key) const;
  std::map<std::string, Value, std::less<>> values_;
};

}  // namespace lemon
