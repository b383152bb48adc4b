// ScopedEnv: sets and unsets environment variables for one test and, when it
// is destroyed, puts back every variable it touched as it was before its first
// change (the old value, or unset). Like setenv(3) itself, use it only while
// no other thread reads the environment.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lemon::testing {

class ScopedEnv {
 public:
  ScopedEnv() = default;
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

  // setenv(name, value); false if that failed.
  bool set(const std::string& name, const std::string& value);
  // unsetenv(name); false if that failed.
  bool unset(const std::string& name);

 private:
  void remember(const std::string& name);

  // Each touched variable once, with its value before the first change.
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace lemon::testing
