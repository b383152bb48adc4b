// WhisperServer: the `whispercpp` recipe, served by whisper.cpp's
// whisper-server. Transcriptions go to its /inference route (multipart).
// whisper-server has no API key, so every route (its /load too) is served
// under a path made of the process's secret (issue #24, docs/api.md "Access
// control"):
//
//   whisper-server -m <ggml-*.bin> --port P --host 127.0.0.1 --request-path /<secret>
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
  std::string health_path() const override;
  bool output_reports_out_of_memory(const std::vector<std::string>& lines) const override;
  std::vector<std::pair<std::string, std::string>> child_env(
      const std::string& executable) const override;

 private:
  std::string secret_path() const;  // "/<secret>"
};

}  // namespace lemon
