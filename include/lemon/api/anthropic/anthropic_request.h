// Anthropic Messages API requests (POST /v1/messages) as the
// backend's OpenAI chat completions body:
// - `system` (a string or text blocks) becomes the first system message;
// - content blocks: text; image (a base64 source, as a data: URL in an
//   image_url part); tool_use (an assistant tool call, `input` as its JSON
//   arguments); tool_result (a tool message, its text; `is_error` prefixes
//   "Error: "); thinking (the assistant's reasoning_content);
// - tools (custom tools only) and tool_choice (auto, any -> required, tool,
//   none; disable_parallel_tool_use -> parallel_tool_calls false);
// - max_tokens (required), temperature, top_p, top_k; `thinking` enabled or
//   disabled -> chat_template_kwargs.enable_thinking;
// - stop_sequences are kept by the router, not sent: llama-server's OpenAI
//   answer does not tell a stop sequence from the end of a turn, so the
//   router watches the text itself (AnthropicAnswer) and ends the backend's
//   stream when one appears;
// - the backend is always asked for a stream with usage; non-streaming
//   clients get the collected answer.
// What the router cannot do is refused (kInvalidRequest naming the field),
// never dropped: unknown fields, server tools, document and URL-image
// blocks, redacted thinking, images inside tool results. `metadata` and
// `service_tier` are accepted and have no effect (nothing to bill or track);
// blocks' `cache_control` too (llama-server reuses its prompt cache by
// itself).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"

namespace lemon::api {

struct AnthropicRequest {
  std::string model;
  bool stream = false;
  std::vector<std::string> stop_sequences;
  bool has_images = false;
  nlohmann::json chat;  // the chat completions body for the backend
};

// A /v1/messages body. Errors: kInvalidRequest naming the field in param.
Result<AnthropicRequest> anthropic_to_chat(const nlohmann::json& body);

// A /v1/messages/count_tokens body (max_tokens not needed) as the text the
// backend's tokenizer counts: the system prompt, every message's text, tool
// calls and results, and the tools' definitions, one per line. The chat
// template's own markup is not included (llama-server's /tokenize takes
// text), so the count is a few tokens under what the model sees.
struct AnthropicCountRequest {
  std::string model;
  std::string text;
};
Result<AnthropicCountRequest> anthropic_count_tokens_text(const nlohmann::json& body);

}  // namespace lemon::api
