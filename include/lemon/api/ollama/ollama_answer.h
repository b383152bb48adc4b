// OllamaAnswer: an /api/chat or /api/generate answer built
// from the backend's chat completion chunks (see chat_answer.h).
//
// Streaming is NDJSON (application/x-ndjson), one object per line:
//   {"model","created_at","message":{"role":"assistant","content":"..."},"done":false}
// (/api/generate: "response" instead of "message"; reasoning goes in
// "thinking"), tool calls in one line once their arguments are complete
// ({"function":{"name","arguments":{...}}}, as Ollama sends them), then the
// final line with "done":true, "done_reason" ("stop" or "length") and the
// statistics, durations in nanoseconds:
//   total_duration        from the request's arrival to the end;
//   load_duration         from its arrival until the backend started on the
//                         prompt (waiting for a load or a slot);
//   prompt_eval_duration  llama.cpp's prompt_ms (FLM's prefill time);
//   eval_duration         llama.cpp's predicted_ms, else the time from the
//                         first to the last chunk;
//   prompt_eval_count, eval_count  the backend's usage (or timings).
// Without streaming, the same fields in one object with the whole text.
//
// Thread-safety: one request's; used by its connection thread only.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "lemon/inference/chat_answer.h"

namespace lemon::api {

enum class OllamaEndpoint { kChat, kGenerate };

class OllamaAnswer final : public inference::ChatAnswer {
 public:
  // `model` as the client named it; `started` when the request arrived.
  OllamaAnswer(OllamaEndpoint endpoint, std::string model, bool streaming,
               Clock::time_point started);

  bool streaming() const override { return streaming_; }
  std::string content_type() const override { return "application/x-ndjson"; }
  std::string open() override { return ""; }
  std::string keepalive() override { return ""; }
  std::string chunk(const nlohmann::json& chunk, Clock::time_point now) override;
  bool complete() const override { return false; }
  std::string close(Clock::time_point now) override;
  Result<nlohmann::json> whole(Clock::time_point now) override;

 private:
  nlohmann::json line(const std::string& content, const std::string& thinking) const;
  Result<nlohmann::json> tool_calls() const;
  nlohmann::json final_fields(Clock::time_point now) const;

  const OllamaEndpoint endpoint_;
  const std::string model_;
  const bool streaming_;
  const Clock::time_point started_;

  std::string text_;      // collected (whole())
  std::string thinking_;  // collected (whole())
  struct Call {
    std::string id;
    std::string name;
    std::string arguments;
  };
  std::vector<Call> calls_;
  std::vector<int> call_indexes_;  // the backend's index of each call
  std::string finish_reason_;
  std::optional<Clock::time_point> first_chunk_;
  std::optional<Clock::time_point> last_chunk_;
  std::optional<double> prompt_ms_;     // the backend's prompt processing time
  std::optional<double> predicted_ms_;  // and generation time
  int prompt_tokens_ = 0;
  int completion_tokens_ = 0;
  int deltas_ = 0;
};

// "2024-05-01T12:34:56.123456789Z", as Ollama writes created_at.
std::string ollama_timestamp(std::chrono::system_clock::time_point t);

// The backend's OpenAI embeddings answer as /api/embed's
// {"model","embeddings":[[...]],"total_duration","prompt_eval_count"} (in
// input order) or, `legacy`, /api/embeddings' {"embedding":[...]}.
// kUpstreamProtocol when the answer has no embeddings.
Result<nlohmann::json> ollama_embed_answer(const nlohmann::json& backend, const std::string& model,
                                           bool legacy, std::int64_t total_ns);

}  // namespace lemon::api
