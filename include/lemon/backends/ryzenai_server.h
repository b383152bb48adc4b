// RyzenAiServer: the `ryzenai-llm` recipe and the legacy `oga-npu`,
// `oga-hybrid` and `oga-cpu` names, served by ryzenai-server (ONNX GenAI).
//
//   ryzenai-server -m <model dir with genai_config.json> --port P --ctx-size N [--verbose]
#pragma once

#include "lemon/backends/process_server.h"

namespace lemon {

class RyzenAiServer final : public ProcessServer {
 public:
  RyzenAiServer(const ModelInfo& model, const RecipeOptions& options,
                const BackendEnvironment& env);

  Result<std::vector<std::string>> build_args(int port) const override;
  std::optional<std::string> upstream_path(ApiRoute route) const override;

 protected:
  BinaryQuery binary_query() const override { return {"ryzenai-llm", "npu", "ryzenai-server"}; }
  std::string health_path() const override { return "/health"; }
};

}  // namespace lemon
