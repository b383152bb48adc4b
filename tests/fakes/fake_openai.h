// OpenAI-compatible text generation as served by llama-server, FLM and
// ryzenai-server: POST chat/completions and completions, streaming (SSE) and
// non-streaming, with each server's flavour of performance statistics.
#pragma once

#include <string>

#include <httplib.h>

namespace fake {

enum class StatsStyle {
  kLlama,      // llama.cpp "timings"; usage in streams only with include_usage
  kFlm,        // FLM: usage with prefill_duration_ttft and decoding_speed_tps
  kUsageOnly,  // ryzenai-server: plain usage, no timings
};

struct OpenAiOptions {
  StatsStyle stats = StatsStyle::kLlama;
  std::string model_id;  // reported when the request names no model
  std::string owned_by = "llamacpp";
  // llama-server drafts (a draft model with a draft --spec-type, or
  // draft-mtp): timings carry draft_n and draft_n_accepted (the
  // draft_acceptance knob's share of the generated tokens).
  bool speculative = false;
};

httplib::Server::Handler chat_completions_handler(const OpenAiOptions& options);
httplib::Server::Handler completions_handler(const OpenAiOptions& options);
// POST /tokenize {"content","add_special"}: {"tokens":[...]}, one token per
// whitespace-separated word (and a BOS with add_special).
httplib::Server::Handler tokenize_handler();
// POST /apply-template {"messages",...}: {"prompt": the chat as the fake's
// template renders it} (llama-server's route; counted in /fake/state).
httplib::Server::Handler apply_template_handler();
// GET /v1/models: {"object":"list","data":[{"id",...}]}; `meta` is added when not null.
httplib::Server::Handler models_handler(const OpenAiOptions& options, const std::string& meta_json);

}  // namespace fake
