#include "router_errors.h"

namespace lemon {

Error router_shutting_down() {
  return Error(ErrorCode::kShuttingDown, "lemonade-router is shutting down");
}

Error wrong_model_type(const std::string& model, ModelType actual, ModelType required) {
  return Error(ErrorCode::kUnsupportedOperation,
               "model '" + model + "' has type '" + model_type_name(actual) +
                   "', but this route needs a model of type '" + model_type_name(required) + "'",
               "model");
}

}  // namespace lemon
