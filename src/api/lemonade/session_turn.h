// One turn of a session (SessionApi's generate): the recorder that reads
// the reply as it streams by, and the guard that ends the turn exactly once.
//
// Thread-safety: both live on the turn's connection thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/net/server.h"
#include "lemon/sessions/session_table.h"

namespace lemon::api {

// The assistant's reply as it streams by: text deltas and the last token
// figures. Passes every byte to the client unchanged, and reports the turn's
// outcome (`done`, once) just before the answer's last bytes go out, so a
// client that has the whole answer finds the turn ended.
class TurnRecorder final : public net::ResponseWriter {
 public:
  using Done = std::function<void(const std::optional<TurnResult>&)>;
  TurnRecorder(net::ResponseWriter& inner, Done done) : inner_(inner), done_(std::move(done)) {}

  bool send(int status, const net::Headers& headers, std::string_view body) override;
  bool begin_chunked(int status, const net::Headers& headers) override {
    return inner_.begin_chunked(status, headers);
  }
  bool write_chunk(std::string_view data) override;
  bool finish() override {
    complete();
    return inner_.finish();
  }
  bool headers_sent() const override { return inner_.headers_sent(); }
  bool client_connected() override { return inner_.client_connected(); }
  bool keep_serving_half_closed() override { return inner_.keep_serving_half_closed(); }
  int client_fd() const override { return inner_.client_fd(); }

  bool completed() const { return completed_; }

 private:
  void complete();
  void event(std::string_view text);
  // llama.cpp's timings: prompt_n evaluated, cache_n reused, predicted_n.
  void figures(const nlohmann::json& j);

  net::ResponseWriter& inner_;
  const Done done_;
  std::string pending_;
  std::string reply_;
  bool failed_ = false;
  bool completed_ = false;
  std::int64_t prompt_tokens_ = 0;
  std::int64_t cached_tokens_ = 0;
  std::int64_t completion_tokens_ = 0;
};

// Ends a session's turn exactly once: explicitly, or as nothing (failed)
// when it goes out of scope.
class TurnEnd {
 public:
  TurnEnd(SessionTable& table, std::string id) : table_(table), id_(std::move(id)) {}
  ~TurnEnd() { end(std::nullopt); }
  TurnEnd(const TurnEnd&) = delete;
  TurnEnd& operator=(const TurnEnd&) = delete;
  void end(const std::optional<TurnResult>& result) {
    if (!ended_) {
      ended_ = true;
      table_.end_turn(id_, result);
    }
  }

 private:
  SessionTable& table_;
  const std::string id_;
  bool ended_ = false;
};

}  // namespace lemon::api
