#include "lemon/backends/flm_server.h"

namespace lemon {

FlmServer::FlmServer(ModelInfo model, RecipeOptions options, const BackendEnvironment& env)
    : ProcessServer(std::move(model), std::move(options), Device::kNpu, env) {}

Result<std::vector<std::string>> FlmServer::build_args(int port) const {
  std::vector<std::string> args = {"serve", model().checkpoint()};
  if (options().has("ctx_size") && !options().fitted_context()) {  // FLM fits no context
    args.insert(args.end(), {"--ctx-len", std::to_string(options().ctx_size())});
  }
  // `--cors 0`: no answers to cross-origin preflights (FastFlowLM's only
  // switch; its other answers still allow any origin, docs/api.md "Access
  // control").
  args.insert(args.end(),
              {"--port", std::to_string(port), "--host", "127.0.0.1", "--cors", "0", "--quiet"});
  return args;
}

std::optional<std::string> FlmServer::upstream_path(ApiRoute route) const {
  return openai_path(route,
                     {ApiRoute::kChatCompletions, ApiRoute::kCompletions, ApiRoute::kEmbeddings});
}

std::optional<std::string> FlmServer::rewrite_body(ApiRoute route,
                                                   const nlohmann::json& body) const {
  (void)route;
  if (!body.is_object()) {
    return std::nullopt;
  }
  nlohmann::json copy = body;
  copy["model"] = model().checkpoint();
  return copy.dump();
}

}  // namespace lemon
