// Per-route checks of a JSON request body, run before anything is loaded
// (each route checks its required fields and their types).
// Each returns kInvalidRequest naming the field in param.
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include "lemon/backends/wrapped_server.h"
#include "lemon/core/error.h"

namespace lemon::api {

// The checks for `route`'s JSON body (every route but transcriptions, which
// is multipart).
Status check_request(ApiRoute route, const nlohmann::json& body);

// Copies max_completion_tokens to max_tokens when only the former is given.
// Returns whether the body changed.
bool map_max_completion_tokens(nlohmann::json& body);

}  // namespace lemon::api
