// FlmServer: the `flm` recipe, served by FastFlowLM (`flm serve`) on the NPU.
//
//   flm serve <checkpoint> --ctx-len N --port P --host 127.0.0.1 --quiet
// Readiness is GET /api/tags (FLM has no /health). Requests are forwarded
// with "model" rewritten to the FLM checkpoint. FLM has no Responses API.
#pragma once

#include "lemon/backends/process_server.h"

namespace lemon {

class FlmServer final : public ProcessServer {
 public:
  FlmServer(ModelInfo model, RecipeOptions options, const BackendEnvironment& env);

  Result<std::vector<std::string>> build_args(int port) const override;
  std::optional<std::string> upstream_path(ApiRoute route) const override;
  std::optional<std::string> rewrite_body(ApiRoute route,
                                          const nlohmann::json& body) const override;

 protected:
  BinaryQuery binary_query() const override { return {"flm", "", "flm"}; }
  std::string health_path() const override { return "/api/tags"; }
};

}  // namespace lemon
