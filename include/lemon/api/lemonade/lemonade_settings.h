// LemonadeSettings: what Lemonade's management rooms (src/api/lemonade) are
// configured with, beyond the forwarding settings every API shares
// (inference::ForwardSettings, read through the InferenceGateway).
#pragma once

#include <chrono>
#include <string>

#include "lemon/models/recipe_options.h"

namespace lemon::api {

struct LemonadeSettings {
  std::string cache_dir;  // /system-info's backend lookup
  std::string web_dir;    // the dashboard's files (resources/web); "" serves none
  // Sessions: idle ones end after session_ttl; a new one
  // waits up to session_wait for a free slot.
  std::chrono::milliseconds session_ttl{30 * 60 * 1000};
  std::chrono::milliseconds session_wait{60 * 1000};
  // Where sessions are journaled so they outlive the router;
  // "" keeps them in memory only.
  std::string session_journal_dir;
};

}  // namespace lemon::api
