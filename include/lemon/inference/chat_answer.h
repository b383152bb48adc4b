// ChatAnswer: the answer to one chat request in another API's shape
// (Anthropic Messages, Ollama), built from the backend's
// OpenAI chat completion stream as it arrives. The router always asks the
// backend for a stream (with usage); for a client that asked for a stream,
// chunk() returns the text to write at once, so every backend chunk is
// translated and written as it comes; for the others the answer is
// collected and whole() gives one body at the end. The only text held back
// is what may still turn out to be the start of a stop sequence.
//
// A TranslatingWriter (src/http) feeds a ChatAnswer from the forward path,
// so leases, cancellation on disconnect and stats stay the forward path's.
//
// Thread-safety: one request's; used by its connection thread only.
#pragma once

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"

namespace lemon::inference {

class ChatAnswer {
 public:
  using Clock = std::chrono::steady_clock;

  virtual ~ChatAnswer() = default;

  // The client asked for a stream.
  virtual bool streaming() const = 0;
  // The translated stream's Content-Type.
  virtual std::string content_type() const = 0;
  // The first text of the stream, written when it opens ("" for none).
  virtual std::string open() = 0;
  // Text for a keepalive while the model loads ("" for none).
  virtual std::string keepalive() = 0;
  // One chat.completion.chunk from the backend: the text to write now.
  virtual std::string chunk(const nlohmann::json& chunk, Clock::time_point now) = 0;
  // True once the answer is complete before the backend's stream ends (a
  // stop sequence appeared): the backend's request is then cancelled.
  virtual bool complete() const = 0;
  // The text that ends the stream (closing events, final statistics).
  virtual std::string close(Clock::time_point now) = 0;
  // The whole answer for a client that did not stream; kUpstreamProtocol
  // when the backend's answer cannot be expressed (tool arguments that are
  // not JSON).
  virtual Result<nlohmann::json> whole(Clock::time_point now) = 0;
};

// A whole chat.completion (a backend that answered without streaming) as
// the one chunk that carries the same content.
nlohmann::json chat_completion_as_chunk(const nlohmann::json& completion);

// The "prompt_tokens"/"completion_tokens" a backend's chunk reports in
// `usage` or, from llama.cpp, in `timings` (prompt_n, predicted_n); fields it
// lacks are left as they are.
void tokens_from_chunk(const nlohmann::json& chunk, int& prompt_tokens, int& completion_tokens);

}  // namespace lemon::inference
