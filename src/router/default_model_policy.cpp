#include "lemon/router/default_model_policy.h"

#include <algorithm>

namespace lemon {

std::vector<std::string> defaults_to_load(const std::vector<AbsentDefault>& absent,
                                          const std::vector<ServerActivity>& servers,
                                          DefaultClock::time_point now,
                                          std::chrono::milliseconds delay) {
  std::vector<std::string> out;
  for (const auto& d : absent) {
    if (d.loading) {
      continue;
    }
    if (!d.type) {
      out.push_back(d.model);  // its first load, at start
      continue;
    }
    if (now - d.gone_since < delay) {
      continue;
    }
    const bool type_idle =
        std::all_of(servers.begin(), servers.end(), [&](const ServerActivity& s) {
          return s.type != *d.type || (s.busy == 0 && now - s.idle_since >= delay);
        });
    if (type_idle) {
      out.push_back(d.model);
    }
  }
  return out;
}

}  // namespace lemon
