// SseStream: one request (usually a POST) over a raw loopback socket whose response is read as
// server-sent events as they arrive, each stamped with the CLOCK_MONOTONIC
// time its last byte was received. The test can stop reading and disconnect
// at any moment (something cpp-httplib's client cannot do mid-response).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/test_env.h"

namespace lemon::testing {

// CLOCK_MONOTONIC in ns (the clock of the fakes' "fake_ts_ns").
std::int64_t monotonic_ns();

struct SseEvent {
  std::string data;                   // the data: lines joined with '\n'
  std::string event;                  // the event: field
  std::string id;                     // the id: field
  std::vector<std::string> comments;  // ": text" lines, without the colon
  std::int64_t arrival_ns = 0;        // when its last byte arrived

  bool is_comment() const { return data.empty() && event.empty() && !comments.empty(); }
  bool is_done() const { return data == "[DONE]"; }
};

class SseStream {
 public:
  // Connects to 127.0.0.1:port and sends `POST path` with a JSON body.
  SseStream(int port, const std::string& path, const std::string& body);
  // Any method (a body is sent with POST only), with extra request headers.
  SseStream(int port, const std::string& method, const std::string& path, const std::string& body,
            const std::vector<std::pair<std::string, std::string>>& headers);
  ~SseStream();
  SseStream(const SseStream&) = delete;
  SseStream& operator=(const SseStream&) = delete;

  bool connected() const { return fd_ >= 0; }
  // Reads the status line and headers; false on timeout or a closed socket.
  bool read_head(std::chrono::milliseconds timeout = kWait);
  int status() const { return status_; }
  std::string header(const std::string& name) const;  // lower-case name

  // The next event, or nullopt once the body has ended (see ended_cleanly())
  // or the deadline passed (timed_out()).
  std::optional<SseEvent> next(std::chrono::milliseconds timeout = kWait);
  // The same, skipping comment-only events: the router's ": ping" heartbeat
  // may come in any second of silence (a slow machine, a sanitizer), so a
  // test that reads or counts data events must not see it.
  std::optional<SseEvent> next_data(std::chrono::milliseconds timeout = kWait);
  // Every remaining event until the body ends, without comment-only ones.
  std::vector<SseEvent> rest(std::chrono::milliseconds timeout = kWait);
  // Every remaining event, comments included (heartbeat tests).
  std::vector<SseEvent> rest_with_comments(std::chrono::milliseconds timeout = kWait);
  // The undecoded remainder of the body (for non-SSE replies), until it ends.
  std::string read_body(std::chrono::milliseconds timeout = kWait);

  bool ended() const { return ended_; }
  // The body ended as HTTP says it should (the zero-length last chunk, or
  // Content-Length bytes), not by the connection dropping.
  bool ended_cleanly() const { return clean_end_; }
  bool timed_out() const { return timed_out_; }

  // Closes the socket (the client goes away mid-response).
  void disconnect();

 private:
  bool fill(std::chrono::steady_clock::time_point deadline);
  void decode();
  void split_events();

  int fd_ = -1;
  std::string raw_;   // received, not yet decoded
  std::string body_;  // decoded body, not yet split into events
  std::deque<SseEvent> events_;
  std::int64_t last_recv_ns_ = 0;
  bool head_done_ = false;
  int status_ = 0;
  std::vector<std::pair<std::string, std::string>> headers_;
  bool chunked_ = false;
  long long content_left_ = -1;  // for Content-Length bodies
  long long chunk_left_ = 0;     // bytes of the current chunk still to decode
  bool chunk_crlf_ = false;      // the CRLF after a chunk's data is pending
  bool ended_ = false;
  bool clean_end_ = false;
  bool closed_ = false;  // the peer closed the connection
  bool timed_out_ = false;
};

}  // namespace lemon::testing
