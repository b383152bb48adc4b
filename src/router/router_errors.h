// Errors more than one part of the router answers with.
#pragma once

#include <string>

#include "lemon/core/error.h"
#include "lemon/core/model_types.h"

namespace lemon {

// kShuttingDown: the router stops; nothing new starts.
Error router_shutting_down();
// kUnsupportedOperation: `model` is of type `actual`, the route needs `required`.
Error wrong_model_type(const std::string& model, ModelType actual, ModelType required);

}  // namespace lemon
