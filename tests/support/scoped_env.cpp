#include "support/scoped_env.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>

namespace lemon::testing {

ScopedEnv::~ScopedEnv() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second) {
      ::setenv(it->first.c_str(), it->second->c_str(), 1);
    } else {
      ::unsetenv(it->first.c_str());
    }
  }
}

void ScopedEnv::remember(const std::string& name) {
  if (std::any_of(saved_.begin(), saved_.end(), [&](const auto& p) { return p.first == name; })) {
    return;
  }
  const char* old = std::getenv(name.c_str());
  saved_.emplace_back(name, old != nullptr ? std::optional<std::string>(old) : std::nullopt);
}

bool ScopedEnv::set(const std::string& name, const std::string& value) {
  remember(name);
  return ::setenv(name.c_str(), value.c_str(), 1) == 0;
}

bool ScopedEnv::unset(const std::string& name) {
  remember(name);
  return ::unsetenv(name.c_str()) == 0;
}

}  // namespace lemon::testing
