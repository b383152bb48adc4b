// Ollama API requests as the backend's OpenAI bodies:
// - /api/chat: messages (system, user, assistant, tool; `images` as
//   image_url data: URLs; an assistant's `tool_calls` with object arguments
//   and `thinking`; a tool message's `tool_name`/`tool_call_id` matched to
//   the call it answers), tools, format, options, think, stream (default
//   true), keep_alive;
// - /api/generate: `system` and `prompt` (and `images`) as a system and a
//   user message, so the model's chat template applies as in Ollama;
// - /api/embed (`input`, a string or strings) and /api/embeddings (`prompt`).
// `options`: temperature, top_p, top_k, min_p, typical_p, seed, num_predict
// (max_tokens; -1 and -2 mean no limit), stop, repeat_penalty,
// repeat_last_n, presence_penalty, frequency_penalty, mirostat,
// mirostat_tau, mirostat_eta, num_keep (n_keep). `format` "json" or a JSON
// schema -> response_format. `think` true/false -> the template's
// enable_thinking, "low"/"medium"/"high" -> its reasoning_effort.
// Anything the router cannot honour is refused with kInvalidRequest naming
// it, never dropped: unknown fields, load-time options (num_ctx, num_gpu,
// num_thread, ...; a model's load options set those), `raw`, `context`,
// `suffix`, `template`, embed's `truncate: true` and `dimensions`.
// Model names are as in /api/v1/models; a ":latest" tag is accepted.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"

namespace lemon::api {

struct OllamaRequest {
  std::string model;         // the catalogue's name (":latest" removed)
  std::string client_model;  // as the client wrote it, echoed in answers
  bool stream = true;
  // The request's keep_alive (negative: forever, 0: unload when idle).
  std::optional<std::chrono::milliseconds> keep_alive;
  // No messages (chat) or an empty prompt (generate): load the model, or
  // unload it with keep_alive 0, and generate nothing.
  bool load_only = false;
  bool has_images = false;
  nlohmann::json openai;  // the chat completions or embeddings body
};

Result<OllamaRequest> ollama_chat_request(const nlohmann::json& body);
Result<OllamaRequest> ollama_generate_request(const nlohmann::json& body);
// `legacy`: /api/embeddings ({"prompt"}); otherwise /api/embed ({"input"}).
Result<OllamaRequest> ollama_embed_request(const nlohmann::json& body, bool legacy);

// A name as the client wrote it, without a ":latest" tag.
std::string ollama_catalogue_name(std::string_view name);
// A catalogue name as Ollama lists it: with ":latest" unless it has a tag.
std::string ollama_listed_name(std::string_view name);

// A request's "model" (or the older "name") for /api/show, /api/pull and
// /api/delete, without ":latest". kInvalidRequest when missing.
Result<std::string> ollama_model_field(const nlohmann::json& body);

}  // namespace lemon::api
