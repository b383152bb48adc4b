// AnswerBuffer: a response writer that keeps an answer in memory, its
// status and whole body, streamed or not, for a call the router makes to
// itself (a routing classifier's, a realtime segment's transcription). It
// reads as connected until `gone()` says the caller gave up.
//
// Thread-safety: one call's, on the thread that makes it.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "lemon/net/server.h"

namespace lemon::inference {

class AnswerBuffer final : public net::ResponseWriter {
 public:
  explicit AnswerBuffer(std::function<bool()> gone) : gone_(std::move(gone)) {}

  bool send(int status, const net::Headers&, std::string_view body) override {
    status_ = status;
    body_.assign(body);
    sent_ = true;
    return true;
  }
  bool begin_chunked(int status, const net::Headers&) override {
    status_ = status;
    sent_ = true;
    return true;
  }
  bool write_chunk(std::string_view data) override {
    body_.append(data);
    return true;
  }
  bool finish() override { return true; }
  bool headers_sent() const override { return sent_; }
  bool client_connected() override { return !gone_(); }
  int client_fd() const override { return -1; }

  int status() const { return status_; }
  const std::string& body() const { return body_; }

 private:
  std::function<bool()> gone_;
  int status_ = 0;
  bool sent_ = false;
  std::string body_;
};

}  // namespace lemon::inference
