#include "lemon/api/openai/transcription_form.h"

#include <string_view>

namespace lemon::api {
namespace {

const char* const kFormats[] = {"json", "text", "srt", "verbose_json", "vtt"};

// OpenAI's fields, then whisper-server's (whisper.cpp v1.8.2,
// examples/server/server.cpp, get_req_parameters).
const char* const kFields[] = {
    "file", "model", "language", "prompt", "response_format", "temperature",
    "timestamp_granularities[]", "timestamp_granularities", "include[]", "stream",
    "chunking_strategy",
    // whisper-server's
    "offset_t", "offset_n", "duration", "max_context", "max_len", "best_of", "beam_size",
    "audio_ctx", "word_thold", "entropy_thold", "logprob_thold", "debug_mode", "translate",
    "diarize", "tinydiarize", "split_on_word", "no_timestamps", "detect_language",
    "temperature_inc", "suppress_non_speech", "suppress_nst", "no_context", "vad", "vad_threshold",
    "vad_min_speech_duration_ms", "vad_min_silence_duration_ms", "vad_max_speech_duration_s",
    "vad_speech_pad_ms", "vad_samples_overlap", "no_language_probabilities"};

template <std::size_t N>
bool one_of(std::string_view value, const char* const (&list)[N]) {
  for (const char* item : list) {
    if (value == item) {
      return true;
    }
  }
  return false;
}

const http::MultipartPart* part_named(const std::vector<http::MultipartPart>& parts,
                                      std::string_view name) {
  for (const auto& p : parts) {
    if (p.name == name) {
      return &p;
    }
  }
  return nullptr;
}

}  // namespace

Status check_transcription_form(const std::vector<http::MultipartPart>& parts) {
  const http::MultipartPart* file = part_named(parts, "file");
  if (file == nullptr || file->data.empty()) {
    return Error(ErrorCode::kInvalidRequest, "'file' (the audio) is required", "file");
  }
  const http::MultipartPart* model = part_named(parts, "model");
  if (model == nullptr || model->data.empty()) {
    return Error(ErrorCode::kInvalidRequest, "'model' is required", "model");
  }
  for (const auto& part : parts) {
    if (!one_of(part.name, kFields)) {
      return Error(ErrorCode::kInvalidRequest,
                   "unknown field '" + part.name +
                       "' (docs/api.md lists the fields audio/transcriptions takes)",
                   part.name);
    }
  }
  const http::MultipartPart* format = part_named(parts, "response_format");
  if (format != nullptr && !one_of(format->data, kFormats)) {
    return Error(ErrorCode::kInvalidRequest,
                 "'response_format' must be json, text, srt, verbose_json or vtt",
                 "response_format");
  }
  return {};
}

std::string transcription_content_type(const std::vector<http::MultipartPart>& parts) {
  const http::MultipartPart* format = part_named(parts, "response_format");
  return format != nullptr && format->data == "text" ? "text/plain; charset=utf-8" : "";
}

}  // namespace lemon::api
