// Anthropic's message content read as chat messages (anthropic_request's
// building blocks). Each check names the field it refuses, in the Messages
// API's words.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"

namespace lemon::api::anthropic {

// obj[key] when it is a string.
std::optional<std::string> string_at(const nlohmann::json& obj, const char* key);
// A content block's "type" ("" when it has none).
std::string block_type(const nlohmann::json& block);
// "system": a string or text blocks, as one text.
Result<std::string> system_text(const nlohmann::json& system);
// body.messages as chat messages, appended to `out`; `has_images` is set
// when any user turn holds an image.
Status messages_of(const nlohmann::json& body, nlohmann::json& out, bool& has_images);

}  // namespace lemon::api::anthropic
