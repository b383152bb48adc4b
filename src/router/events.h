// How the router's parts report what they did: a RouterEvent goes to
// RouterConfig::on_event on the thread that did it, with none of the
// router's locks held.
#pragma once

#include "lemon/router/router.h"

namespace lemon {

inline void emit_event(const RouterConfig& config, const RouterEvent& event) {
  if (config.on_event) {
    config.on_event(event);
  }
}

}  // namespace lemon
