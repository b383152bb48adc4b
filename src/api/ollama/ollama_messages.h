// Ollama's messages and images read as chat completions messages
// (ollama_request's building blocks). Each check names the field it
// refuses, in the Ollama API's words.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"

namespace lemon::api::ollama {

// True when body[key] is missing or null (Ollama's clients send nulls).
bool absent(const nlohmann::json& body, const char* key);
// `text` with base64 `images` as one user content: text and image_url parts.
Result<nlohmann::json> with_images(const std::string& text, const nlohmann::json& images,
                                   const std::string& where);
// /api/chat's messages as chat completions messages; `has_images` is set
// when any message holds an image.
Result<nlohmann::json> chat_messages(const nlohmann::json& messages, bool& has_images);

}  // namespace lemon::api::ollama
