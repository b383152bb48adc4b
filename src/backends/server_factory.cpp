#include "lemon/backends/server_factory.h"

#include "lemon/backends/flm_server.h"
#include "lemon/backends/llamacpp_server.h"
#include "lemon/backends/ryzenai_server.h"
#include "lemon/backends/sd_server.h"
#include "lemon/backends/whisper_server.h"

namespace lemon {

std::string backend_for(const std::string& recipe, const RecipeOptions& options) {
  if (recipe == "llamacpp") {
    return options.string_value("llamacpp_backend");
  }
  if (recipe == "whispercpp") {
    return options.string_value("whispercpp_backend");
  }
  if (recipe == "sd-cpp") {
    return options.string_value("sd-cpp_backend");
  }
  if (recipe == "ryzenai-llm" || recipe.rfind("oga-", 0) == 0) {
    return "npu";
  }
  return "";
}

Result<std::shared_ptr<WrappedServer>> RecipeServerFactory::create(const ModelInfo& model,
                                                                   const RecipeOptions& options) {
  const std::string& r = model.recipe;
  if (r == "llamacpp") {
    return std::shared_ptr<WrappedServer>(std::make_shared<LlamaCppServer>(model, options, env_));
  }
  if (r == "flm") {
    return std::shared_ptr<WrappedServer>(std::make_shared<FlmServer>(model, options, env_));
  }
  if (r == "ryzenai-llm" || r == "oga-npu" || r == "oga-hybrid" || r == "oga-cpu") {
    return std::shared_ptr<WrappedServer>(std::make_shared<RyzenAiServer>(model, options, env_));
  }
  if (r == "whispercpp") {
    return std::shared_ptr<WrappedServer>(std::make_shared<WhisperServer>(model, options, env_));
  }
  if (r == "sd-cpp") {
    return std::shared_ptr<WrappedServer>(std::make_shared<SdServer>(model, options, env_));
  }
  return Error(
      ErrorCode::kUnknownRecipe,
      "model '" + model.name + "' uses recipe '" + r + "', which lemonade-router cannot serve",
      "model");
}

}  // namespace lemon
