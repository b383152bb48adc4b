// Fault-injection knobs (tests/fakes/README.md). Read once at startup from the
// LEMON_FAKE_CONFIG environment variable and then from a sidecar JSON file
// (later sources override earlier ones, key by key).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fake {

struct ExitSpec {
  int code = 1;
  std::string message;
};

struct ErrorSpec {
  int status = 500;
  std::string message;
};

struct Knobs {
  int startup_delay_ms = 0;
  std::optional<ExitSpec> exit_at_start;
  bool ignore_model_check = false;
  bool hang_at_start = false;
  // The load waits at a gate (POST /fake/release) once it has begun, so a
  // test sees the model loading for exactly as long as it needs.
  bool load_gate = false;
  // false: a llama-server from before the router's child mode (it ignores
  // LLAMA_SERVER_ROUTER_PORT: no state lines, stdin unread).
  bool child_mode = true;
  // Load progress reports (llama-server's child mode) between 0 and 1,
  // spread over startup_delay_ms.
  int load_progress_steps = 2;
  // The load stops for good after its Nth report past the first (0: after
  // text_model 0 %): no more lines, /health answers 503 forever, as a load
  // stuck on a dead disk or a hung driver. Negative: it never stalls.
  int load_stalls_after_steps = -1;
  std::optional<int> crash_on_request;
  std::optional<int> crash_mid_stream_after_chunks;
  bool hang_requests = false;
  int response_delay_ms = 0;
  int stream_chunk_delay_ms = 0;
  // After a stream's last event ([DONE]), the ms before its body ends, as
  // llama-server still finishes its task after writing [DONE].
  int stream_end_delay_ms = 0;
  std::optional<int> tokens;
  bool ignore_sigterm = false;
  std::optional<ErrorSpec> error_status;
  std::optional<int> stream_error_after_chunks;
  // Prompt evaluation the fake really spends: microseconds per prompt token
  // not reused from the slot's cache (0: none, only reported).
  int prompt_us_per_token = 0;
  // Recovery (issue #14 §2). Out of memory at start while more than N other
  // llama-servers of the same parent (the router) run.
  std::optional<int> oom_while_siblings_above;
  // Chat shapes the "template" rejects: "reasoning_with_tool_calls",
  // "system_first", "alternate_roles".
  std::vector<std::string> template_rules;
  // The first N inference requests are reset (RST) before any answer.
  int reset_first_requests = 0;
  // Long prompts (issue #26). A streamed chat or completion that asks
  // "return_progress" gets llama-server's prompt-progress chunks during its
  // response delay (the prefill): 0 % at the start, one every
  // prefill_progress_ms (0: none between), 100 % at the end...
  int prefill_progress_ms = 0;
  // ... unless the fake plays a llama-server from before progress existed.
  bool ignore_return_progress = false;
  // GET /slots shows every slot idle, even one that is working.
  bool slots_report_idle = false;
  // Slot files (issue #29 §1): POST /slots/{id}?action=save fails (500
  // "Unable to save slot"), writes half of the file yet answers as if all
  // was written, or takes this many ms; action=restore is refused (400).
  bool slot_save_fails = false;
  bool slot_save_truncates = false;
  int slot_save_delay_ms = 0;
  bool slot_restore_fails = false;
  // action=restore waits at the tests' gate (POST /fake/release) first.
  bool slot_restore_gate = false;
  // A stream's response head is sent only after this many ms, as older
  // llama-servers answered their head with the first result.
  int head_delay_ms = 0;
  // Every request's gate (GenParams::gate), for clients that cannot send
  // lemon_fake (the dashboard's chat box).
  std::string gate;
  // Speculative decoding (llama-server): the share of drafted tokens the
  // model accepts, reported as timings.draft_n / draft_n_accepted.
  double draft_acceptance = 0.75;
  // Flag names and --spec-type types this llama-server does not know:
  // absent from its --help and refused (an older release).
  std::vector<std::string> unknown_flags;
  // What the model "says" in a non-streaming chat answer, in place of the
  // repeating sentence ("" : the sentence), as a real model answers a
  // routing classifier.
  std::string reply_text;
};

// Loads the knobs; `sidecar_path` may be empty or name a missing file. A
// malformed configuration prints an error to stderr and exits 1.
Knobs load_knobs(const std::string& sidecar_path);

// Timing of one inference request after per-request overrides.
struct GenParams {
  int response_delay_ms = 0;
  int stream_chunk_delay_ms = 0;
  std::optional<int> tokens;  // forced token count, if any
  bool hang = false;
  int prompt_us_per_token = 0;
  // A test's gate (lemon_fake.gate): "start" holds the answer before its
  // first token (or its body) until POST /fake/release, "tokens" holds
  // every token after the first until a release each; "" none.
  std::string gate;
  // llama-server's SSE ping: a stream silent this many seconds gets a ":"
  // comment (its --sse-ping-interval, 30 by default, or the request's
  // "sse_ping_interval"); <= 0: none.
  int sse_ping_interval_s = 30;
};

// Knob defaults, overridden by a "lemon_fake" object in the request body
// (keys response_delay_ms, stream_chunk_delay_ms, tokens, prompt_us_per_token,
// gate), and llama-server's own request field "sse_ping_interval". Never
// throws.
GenParams request_params(const Knobs& knobs, const nlohmann::json& body);

}  // namespace fake
