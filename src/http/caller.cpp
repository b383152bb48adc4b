#include "lemon/http/caller.h"

namespace lemon::http {

const ApiKey* caller_key(const net::Request& request) {
  const auto* caller = dynamic_cast<const Caller*>(request.context.get());
  return caller != nullptr ? caller->key : nullptr;
}

std::optional<Error> refuse_model(const ApiKey* key, std::string_view model) {
  if (key == nullptr || key->allows_model(model)) {
    return std::nullopt;
  }
  return Error(ErrorCode::kForbidden,
               "API key '" + key->name + "' may not use model '" + std::string(model) + "'",
               "model");
}

}  // namespace lemon::http
