#include "lemon/router/default_model_policy.h"

#include <algorithm>

namespace lemon {

std::vector<std::string> defaults_to_load(const std::vector<AbsentDefault>& absent,
                                          const std::vector<ServerActivity>& servers,
                                          DefaultClock::time_point now,
                                          std::chrono::milliseconds delay, bool loads_pending) {
  std::vector<std::string> out;
  if (loads_pending) {
    return out;  // one load at a time: a default never races another model's load
  }
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
    const bool quiet = std::all_of(servers.begin(), servers.end(), [&](const ServerActivity& s) {
      const bool concerned = s.type == *d.type || s.model == d.displaced_by;
      return !concerned || (s.busy == 0 && now - s.idle_since >= delay);
    });
    if (quiet) {
      out.push_back(d.model);
    }
  }
  return out;
}

}  // namespace lemon
