// How a fake answers inference requests: bookkeeping for /fake/state, the
// crash/error/hang knobs, artificial delays that keep watching for a client
// disconnect, and token streams written one server-sent event at a time.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <httplib.h>

#include "fake_knobs.h"

namespace fake {

// One inference request, counted as "active" while alive. mark_answered()
// (called just before the last byte goes out, so a client that has read the
// whole reply sees up-to-date counters) makes it "completed"; destroying it
// unanswered makes it "cancelled" (the client went away).
class Job {
 public:
  Job();
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  void mark_answered();
  // Keeps `resource` (a llama-server slot) until the job ends.
  void hold(std::shared_ptr<void> resource) { holds_.push_back(std::move(resource)); }

 private:
  bool answered_ = false;
  std::vector<std::shared_ptr<void>> holds_;
};
using JobPtr = std::shared_ptr<Job>;

// Admits an inference request. Answers 503 while loading, applies the
// crash_on_request and error_status knobs, and returns nullptr when the
// request has already been answered.
JobPtr admit(httplib::Response& res);
// The same, after the reset_first_requests knob: such a request's connection
// is reset (RST) with no answer, as by a backend that is restarting.
JobPtr admit(const httplib::Request& req, httplib::Response& res);

// Answers immediately (validation errors and the like).
void reply_now(const JobPtr& job, httplib::Response& res, int status, const std::string& body,
               const char* content_type = "application/json");

// Answers `body` in one chunk after response_delay_ms plus `extra_delay_ms`
// (or never, with hang), polling for a client disconnect every 5 ms. With
// no delay and no gate, at once with a Content-Length, as llama-server does.
void reply_later(const JobPtr& job, httplib::Response& res, const GenParams& params,
                 int extra_delay_ms, std::string body,
                 std::string content_type = "application/json");

// A token stream: `head` events, then one event per token, then `tail` events.
struct StreamPlan {
  int tokens = 0;
  std::function<std::vector<std::string>()> head;
  // Builds the event for token `index` with text `piece`; called just before
  // it is written so it can carry a fresh timestamp.
  std::function<std::string(int index, const std::string& piece)> token_event;
  std::function<std::vector<std::string>()> tail;
  // The event sent by stream_error_after_chunks (default: llama.cpp's).
  std::function<std::string()> error_event;
  // With "return_progress": the prompt-progress event for `processed` of
  // the prompt's tokens, sent during the response delay (prefill_progress_ms).
  std::function<std::string(long processed)> progress_event;
  long prompt_tokens = 0;
  long cached_tokens = 0;
};

// POST /fake/release: opens every gate an answer waits at now
// (GenParams::gate); gates_held() counts them, for /fake/state's "held",
// and gates_reached() every gate an answer has come to ("gates_reached").
void release_gates();
int gates_held();
long gates_reached();
// Holds the caller (a handler with no body to stream) at a gate until the
// next release; false when the fake stops first.
bool wait_at_gate();

// Streams `plan` as text/event-stream, applying the delay, hang, crash and
// error knobs. Each event is its own sink.write().
void reply_stream(const JobPtr& job, httplib::Response& res, const GenParams& params,
                  StreamPlan plan);

}  // namespace fake
