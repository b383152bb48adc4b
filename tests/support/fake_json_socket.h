// FakeJsonSocket: a JsonSocket (lemon/http/json_socket.h) that keeps what a
// room sends, for unit tests of the WebSocket rooms without a server.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/http/json_socket.h"

namespace lemon::testing {

class FakeJsonSocket final : public http::JsonSocket {
 public:
  bool send(const nlohmann::json& event) override {
    std::lock_guard lock(mu_);
    if (refuse_sends_ || closed_) {
      return false;
    }
    events_.push_back(event);
    return true;
  }
  bool send_error(std::string_view message, std::string_view type) override {
    return send({{"type", "error"}, {"error", {{"message", message}, {"type", type}}}});
  }
  void close(std::uint16_t code, std::string_view reason) override {
    std::lock_guard lock(mu_);
    closed_ = true;
    close_code_ = code;
    close_reason_ = std::string(reason);
  }
  void abandon(std::uint16_t code, std::string_view reason) override { close(code, reason); }
  void wake() override {
    std::lock_guard lock(mu_);
    ++wakes_;
  }
  std::size_t queued_bytes() const override { return 0; }

  std::vector<nlohmann::json> events() {
    std::lock_guard lock(mu_);
    return events_;
  }
  std::vector<std::string> types() {
    std::vector<std::string> out;
    for (const auto& e : events()) {
      out.push_back(e.value("type", ""));
    }
    return out;
  }
  void clear() {
    std::lock_guard lock(mu_);
    events_.clear();
  }
  void refuse_sends(bool refuse) {
    std::lock_guard lock(mu_);
    refuse_sends_ = refuse;
  }
  int wakes() {
    std::lock_guard lock(mu_);
    return wakes_;
  }
  bool closed() {
    std::lock_guard lock(mu_);
    return closed_;
  }
  std::uint16_t close_code() {
    std::lock_guard lock(mu_);
    return close_code_;
  }

 private:
  std::mutex mu_;
  std::vector<nlohmann::json> events_;
  bool refuse_sends_ = false;
  bool closed_ = false;
  std::uint16_t close_code_ = 0;
  std::string close_reason_;
  int wakes_ = 0;
};

}  // namespace lemon::testing
