// ChatSession: a conversation with one model through the router's streaming
// /api/v1/chat/completions. It keeps the history (user and assistant turns),
// streams each reply to a callback (reasoning text flagged), and can be
// stopped mid-reply; a stopped or failed turn is not kept.
//
// Thread-safety: one thread.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/cli/server_client.h"
#include "lemon/core/error.h"

namespace lemon::cli {

class ChatSession {
 public:
  // `system`, when not empty, is the first message of every request.
  ChatSession(const ServerClient& client, std::string model, std::string system = "")
      : client_(client), model_(std::move(model)), system_(std::move(system)) {
    clear();
  }

  // The reply's text; kCancelled when `stop` turned true, another error when
  // the server failed or the stream ended early.
  Result<std::string> send(const std::string& text,
                           const std::function<void(std::string_view, bool reasoning)>& on_text,
                           const std::function<bool()>& stop);
  void clear() {
    messages_ = nlohmann::json::array();
    if (!system_.empty()) {
      messages_.push_back({{"role", "system"}, {"content", system_}});
    }
  }
  std::size_t turns() const { return (messages_.size() - (system_.empty() ? 0 : 1)) / 2; }

 private:
  const ServerClient& client_;
  std::string model_;
  std::string system_;
  nlohmann::json messages_ = nlohmann::json::array();
};

}  // namespace lemon::cli
