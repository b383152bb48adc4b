// ServerFactory: makes the WrappedServer for a model. The router only knows
// this interface, so its policy tests use an in-process fake.
//
// Thread-safety: create() may be called from any thread.
#pragma once

#include <memory>

#include "lemon/backends/process_server.h"
#include "lemon/backends/wrapped_server.h"
#include "lemon/core/error.h"

namespace lemon {

class ServerFactory {
 public:
  virtual ~ServerFactory() = default;
  // A new, not yet started server for `model` with effective `options`.
  // kUnknownRecipe when no WrappedServer subclass serves the recipe.
  virtual Result<std::shared_ptr<WrappedServer>> create(const ModelInfo& model,
                                                        const RecipeOptions& options) = 0;
};

// The production factory: one ProcessServer subclass per recipe.
class RecipeServerFactory final : public ServerFactory {
 public:
  explicit RecipeServerFactory(const BackendEnvironment& env) : env_(env) {}
  Result<std::shared_ptr<WrappedServer>> create(const ModelInfo& model,
                                                const RecipeOptions& options) override;

 private:
  const BackendEnvironment& env_;
};

// The backend name a recipe's options select ("cpu", "vulkan", "npu", ...).
std::string backend_for(const std::string& recipe, const RecipeOptions& options);

}  // namespace lemon
