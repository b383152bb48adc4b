// WhisperServer: the `whispercpp` recipe, served by whisper.cpp's
// whisper-server. Transcriptions go to its /inference route (multipart).
// whisper-server has no API key, so every route (its /load too) is served
// under a path made of the process's secret (docs/api.md "Access
// control"):
//
//   whisper-server -m <ggml-*.bin> --port P --host 127.0.0.1 --request-path /<secret>
//
// What the real program does, checked against whisper.cpp v1.8.2's
// examples/server/server.cpp (docs/testing.md): an upload it
// cannot decode gets status 200 with {"error":...}; `text` answers are
// labelled text/html; the fields of a request that fails are kept for the
// next one.
#pragma once

#include "lemon/backends/process_server.h"

namespace lemon {

class WhisperServer final : public ProcessServer {
 public:
  WhisperServer(const ModelInfo& model, const RecipeOptions& options,
                const BackendEnvironment& env);

  Result<std::vector<std::string>> build_args(int port) const override;
  std::optional<std::string> upstream_path(ApiRoute route) const override;
  // The client's form with `response_format` and `temperature` always
  // present (at whisper-server's defaults when the client left them out):
  // whisper-server keeps the fields of a request it failed to read for the
  // next request, and these two must never leak into another client's.
  std::optional<std::vector<FormField>> rewrite_form(
      ApiRoute route, const std::vector<FormField>& fields) const override;
  // whisper-server first reads an upload's bytes, up to the first NUL, as a
  // file name (common-whisper.cpp, read_audio_data): an upload that names a
  // file on this machine would transcribe that file. Such a form is a 400.
  Status check_form(ApiRoute route, const std::vector<FormField>& fields) const override;
  // {"error":"failed to read audio data"} with status 200: a 400 about `file`.
  std::optional<Error> refusal_in_answer(ApiRoute route, std::string_view body) const override;
  // The weights plus the buffers whisper.cpp allocates for the model's shape
  // (read from its ggml header).
  DeviceBytes memory_estimate() const override;

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
