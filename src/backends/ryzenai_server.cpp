#include "lemon/backends/ryzenai_server.h"

namespace lemon {

RyzenAiServer::RyzenAiServer(const ModelInfo& model, const RecipeOptions& options,
                             const BackendEnvironment& env)
    : ProcessServer(model, options, device_for_recipe(model.recipe, "npu"), env) {}

Result<std::vector<std::string>> RyzenAiServer::build_args(int port) const {
  // --host: loopback only, said rather than left to the program's default.
  std::vector<std::string> args = {"-m",         model().resolved_path("main"),
                                   "--port",     std::to_string(port),
                                   "--host",     "127.0.0.1",
                                   "--ctx-size", std::to_string(options().ctx_size())};
  if (verbose()) {
    args.emplace_back("--verbose");
  }
  return args;
}

std::optional<std::string> RyzenAiServer::upstream_path(ApiRoute route) const {
  return openai_path(route, {ApiRoute::kChatCompletions, ApiRoute::kCompletions});
}

}  // namespace lemon
