// WhisperServer: the `whispercpp` recipe, served by whisper.cpp's
// whisper-server. Transcriptions go to its /inference route (multipart).
//
//   whisper-server -m <ggml-*.bin> --port P --host 127.0.0.1
#pragma once

#include "lemon/backends/process_server.h"

namespace lemon {

class WhisperServer final : public ProcessServer {
 public:
  WhisperServer(const ModelInfo& model, const RecipeOptions& options,
                const BackendEnvironment& env);

  Result<std::vector<std::string>> build_args(int port) const override;
  std::optional<std::string> upstream_path(ApiRoute route) const override;

 protected:
  BinaryQuery binary_query() const override;
  std::string health_path() const override { return "/health"; }
  bool output_reports_out_of_memory(const std::vector<std::string>& lines) const override;
  std::vector<std::pair<std::string, std::string>> child_env(
      const std::string& executable) const override;
};

}  // namespace lemon
