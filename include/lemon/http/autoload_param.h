// A request's ?autoload= (llama-server's router, tools/server/README.md):
// "true" or "1" loads a model that is not loaded, any other value makes
// that an error, and no value leaves it to --no-models-autoload.
//
// Thread-safety: a pure function.
#pragma once

#include <optional>

#include "lemon/net/server.h"

namespace lemon::http {

std::optional<bool> autoload_param(const net::Request& request);

}  // namespace lemon::http
