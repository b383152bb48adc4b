#include "lemon/backends/wrapped_server.h"
#include "lemon/router/footprint_store.h"
#include "lemon/router/memory_policy.h"

namespace lemon {

FootprintKey footprint_key(const WrappedServer& server, const DeviceBytes& estimate) {
  nlohmann::json options = server.options().to_json();
  if (const auto& fit = server.fitted_context()) {
    options["ctx_size"] = fit->ctx_size;  // what it holds depends on the size it got
  }
  return {server.model_name(), server.model().recipe, std::move(options), primary_device(estimate)};
}

}  // namespace lemon
