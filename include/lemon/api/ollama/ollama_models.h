// How the Ollama API describes models: /api/tags entries,
// /api/show and /api/ps entries, built from the catalogue's ModelInfo.
// - name/model: the catalogue name with ":latest" (ollama_listed_name);
// - size: the bytes of the model's files on disk (the catalogue's size
//   when they are not there);
// - digest: sha256 of the name and the main checkpoint (a stable id; the
//   router has no Ollama manifests);
// - modified_at: the main file's modification time;
// - details: format (gguf for llama.cpp and whisper.cpp, else the recipe),
//   family (the GGUF's architecture when the header can be read, else the
//   recipe), parameter_size (from the name, e.g. "0.6B") and
//   quantization_level (the checkpoint's variant, e.g. "Q4_0");
// - capabilities (show): completion or embedding, tools, vision, thinking,
//   from the model's type and labels.
//
// Thread-safety: pure functions (they read the model's files' metadata).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lemon/models/model_info.h"

namespace lemon::api {

// The Ollama API version /api/version reports: the one these routes follow
// (the same as Lemonade 9.4.1 reports), so clients that check it enable the
// features they use (tools, thinking, structured output).
inline constexpr const char* kOllamaApiVersion = "0.16.1";

// One /api/tags entry.
nlohmann::json ollama_model_entry(const ModelInfo& info);

// The /api/show answer.
// `num_ctx`: the context the model loads with (its saved ctx_size, else the
// router's), shown in "parameters" as Lemonade 11 and Ollama do.
nlohmann::json ollama_show(const ModelInfo& info, int num_ctx);

// One /api/ps entry: `context_length` the loaded server's context (0:
// unknown); `expires` when it unloads if it stays idle (nullopt: never).
nlohmann::json ollama_running_entry(const ModelInfo& info, int context_length,
                                    std::optional<std::chrono::system_clock::time_point> expires);

}  // namespace lemon::api
