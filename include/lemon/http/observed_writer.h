// ObservedWriter: a ResponseWriter that passes everything through and notes
// what was written: the status, whether the response is a stream, and when
// its first chunk went out (and calls an on_status hook before the head). While a stream is open it
// counts itself in `open_streams` (if given). Shared by the server (drain counts, audit) and the
// inference path (the status and first byte of an answer).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>

#include "lemon/net/server.h"

namespace lemon::http {

class ObservedWriter final : public net::ResponseWriter {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ObservedWriter(net::ResponseWriter& inner, std::atomic<int>* open_streams = nullptr)
      : inner_(inner), open_streams_(open_streams) {}
  ~ObservedWriter() override {
    if (counted_) {
      --*open_streams_;
    }
  }
  ObservedWriter(const ObservedWriter&) = delete;
  ObservedWriter& operator=(const ObservedWriter&) = delete;

  // Called with the status when the response head is about to go out
  // (before the client can see it).
  void on_status(std::function<void(int)> hook) { on_status_ = std::move(hook); }
  // Called once, just before the response's last bytes go out (a whole
  // answer, or a stream's end), so the client cannot act on the answer first.
  void before_end(std::function<void()> hook) { before_end_ = std::move(hook); }

  bool send(int status, const net::Headers& headers, std::string_view body) override {
    note(status);
    end();
    return inner_.send(status, headers, body);
  }
  bool begin_chunked(int status, const net::Headers& headers) override {
    note(status);
    if (open_streams_ != nullptr && !counted_ && !inner_.headers_sent()) {
      ++*open_streams_;
      counted_ = true;
    }
    return inner_.begin_chunked(status, headers);
  }
  bool write_chunk(std::string_view data) override {
    if (!first_chunk_ && !data.empty() && data.front() != ':') {  // SSE comments are not output
      first_chunk_ = Clock::now();
    }
    return inner_.write_chunk(data);
  }
  bool finish() override {
    end();
    return inner_.finish();
  }
  bool headers_sent() const override { return inner_.headers_sent(); }
  bool client_connected() override { return inner_.client_connected(); }
  bool keep_serving_half_closed() override { return inner_.keep_serving_half_closed(); }
  int client_fd() const override { return inner_.client_fd(); }
  bool upgrade_to_websocket(std::string_view accept, const net::Headers& headers,
                            std::shared_ptr<net::WebSocketHandler> handler,
                            std::size_t max_message) override {
    if (inner_.headers_sent()) {
      return false;
    }
    note(101);
    end();
    return inner_.upgrade_to_websocket(accept, headers, std::move(handler), max_message);
  }

  int status() const { return status_; }  // 0 when nothing was written
  std::optional<Clock::time_point> first_chunk() const { return first_chunk_; }

 private:
  void end() {
    if (before_end_) {
      auto hook = std::move(before_end_);
      before_end_ = nullptr;
      hook();
    }
  }
  void note(int status) {
    status_ = status;
    if (on_status_) {
      auto hook = std::move(on_status_);
      on_status_ = nullptr;
      hook(status);
    }
  }

  net::ResponseWriter& inner_;
  std::function<void(int)> on_status_;
  std::function<void()> before_end_;
  std::atomic<int>* const open_streams_;
  bool counted_ = false;
  int status_ = 0;
  std::optional<Clock::time_point> first_chunk_;
};

}  // namespace lemon::http
