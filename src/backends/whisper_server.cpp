#include "lemon/backends/whisper_server.h"

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "lemon/backends/out_of_memory.h"

namespace lemon {
WhisperServer::WhisperServer(const ModelInfo& model, const RecipeOptions& options,
                             const BackendEnvironment& env)
    : ProcessServer(model, options,
                    device_for_recipe("whispercpp", backend_or_cpu("whispercpp", options)), env) {}

BinaryQuery WhisperServer::binary_query() const {
  return {"whispercpp", backend_or_cpu("whispercpp", options()), "whisper-server"};
}

Result<std::vector<std::string>> WhisperServer::build_args(int port) const {
  // whisper-server has no API key: its routes live under a path made of the
  // process's secret instead, which a web page cannot guess.
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

Status WhisperServer::check_form(ApiRoute route, const std::vector<FormField>& fields) const {
  if (route != ApiRoute::kTranscriptions) {
    return {};
  }
  for (const auto& f : fields) {
    if (f.name != "file") {
      continue;
    }
    const std::string as_name(f.data.substr(0, f.data.find('\0')));
    std::error_code ec;
    if (!as_name.empty() && as_name.size() < 4096 && std::filesystem::exists(as_name, ec)) {
      return Error(ErrorCode::kInvalidRequest,
                   "'file' is not audio: its bytes name a path on the server, which "
                   "whisper-server would read in its place",
                   "file");
    }
  }
  return {};
}

std::optional<std::vector<FormField>> WhisperServer::rewrite_form(
    ApiRoute route, const std::vector<FormField>& fields) const {
  if (route != ApiRoute::kTranscriptions) {
    return std::nullopt;
  }
  std::vector<FormField> out = fields;
  // whisper-server's defaults (server.cpp, whisper_params).
  for (const auto& [name, fallback] :
       {std::pair<const char*, const char*>{"response_format", "json"}, {"temperature", "0.0"}}) {
    bool present = false;
    for (const auto& f : fields) {
      present = present || f.name == name;
    }
    if (!present) {
      out.push_back({name, "", "", fallback, nullptr});
    }
  }
  return out;
}

std::optional<Error> WhisperServer::refusal_in_answer(ApiRoute route, std::string_view body) const {
  if (route != ApiRoute::kTranscriptions || body.empty() || body.front() != '{') {
    return std::nullopt;
  }
  auto answer = nlohmann::json::parse(body, nullptr, false);
  if (!answer.is_object() || !answer.contains("error") || answer.contains("text")) {
    return std::nullopt;
  }
  const auto& said = answer["error"];
  return Error(
      ErrorCode::kInvalidRequest,
      "the audio could not be read: " + (said.is_string() ? said.get<std::string>() : said.dump()) +
          " (whisper-server reads WAV, MP3 and FLAC)",
      "file");
}

bool WhisperServer::output_reports_out_of_memory(const std::vector<std::string>& lines) const {
  return ggml_output_reports_out_of_memory(lines);
}

}  // namespace lemon
