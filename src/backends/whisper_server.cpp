#include "lemon/backends/whisper_server.h"

#include <cstdlib>
#include <filesystem>

#include "lemon/backends/out_of_memory.h"

namespace lemon {
namespace {

std::string whisper_backend(const RecipeOptions& options) {
  std::string b = options.string_value("whispercpp_backend");
  return b.empty() ? "cpu" : b;
}

}  // namespace

WhisperServer::WhisperServer(const ModelInfo& model, const RecipeOptions& options,
                             const BackendEnvironment& env)
    : ProcessServer(model, options, device_for_recipe("whispercpp", whisper_backend(options)),
                    env) {}

BinaryQuery WhisperServer::binary_query() const {
  return {"whispercpp", whisper_backend(options()), "whisper-server"};
}

Result<std::vector<std::string>> WhisperServer::build_args(int port) const {
  // whisper-server has no API key: its routes live under a path made of the
  // process's secret instead (issue #24), which a web page cannot guess.
  return std::vector<std::string>{"-m",
                                  model().resolved_path("main"),
                                  "--port",
                                  std::to_string(port),
                                  "--host",
                                  "127.0.0.1",
                                  "--request-path",
                                  secret_path()};
}

std::string WhisperServer::secret_path() const {
  return "/" + secret();
}

std::string WhisperServer::health_path() const {
  return secret_path() + "/health";
}

std::optional<std::string> WhisperServer::upstream_path(ApiRoute route) const {
  if (route == ApiRoute::kTranscriptions) {
    return secret_path() + "/inference";
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> WhisperServer::child_env(
    const std::string& executable) const {
  return release_env(executable);
}

bool WhisperServer::output_reports_out_of_memory(const std::vector<std::string>& lines) const {
  return ggml_output_reports_out_of_memory(lines);
}

}  // namespace lemon
