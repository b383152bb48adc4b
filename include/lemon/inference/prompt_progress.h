// llama-server's prompt progress in a stream. Asked with
// "return_progress": true on a streamed completion, llama-server adds
// "prompt_progress": {"total", "cache", "processed", "time_ms"} to a chunk
// when the prompt starts, after each batch of prompt tokens, and when the
// prompt is done (tools/server/server-task.cpp). The router asks for it on
// every streamed llama.cpp request, reads it as backend activity and for
// the dashboard, and strips it from streams whose client did not ask.
//
// Thread-safety: pure functions; a ProgressStripper belongs to one stream.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lemon::inference {

struct PromptProgress {
  long long total = 0;      // the prompt's tokens
  long long cache = 0;      // of them, found in the slot's cache
  long long processed = 0;  // evaluated so far, the cached ones included
  double time_ms = 0.0;
};

// The progress one SSE event carries, or nullopt when it carries none. Only
// a "prompt_progress" key counts: inside a JSON string its quotes would be
// escaped, so a token's text never matches.
std::optional<PromptProgress> prompt_progress_in(std::string_view event);

// `body` (a JSON object, as the client sent it) with "return_progress": true
// added, or nullopt when it already has the key or is not an object.
std::optional<std::string> with_return_progress(std::string_view body);

// Removes progress events from a stream, passing every other event through
// whole and in order. What it returns is valid until the next call.
class ProgressStripper {
 public:
  // The bytes to forward now: the complete events of what was held plus
  // `data`, less progress events. An incomplete last event waits.
  std::string_view feed(std::string_view data);
  // What is held back: an event not yet complete.
  bool holding() const { return !pending_.empty(); }

 private:
  std::string pending_;
  std::string out_;
};

}  // namespace lemon::inference
