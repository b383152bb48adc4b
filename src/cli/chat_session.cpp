#include "lemon/cli/chat_session.h"

#include <optional>

#include "lemon/cli/sse_events.h"

namespace lemon::cli {

Result<std::string> ChatSession::send(const std::string& text,
                                      const std::function<void(std::string_view, bool)>& on_text,
                                      const std::function<bool()>& stop) {
  nlohmann::json messages = messages_;
  messages.push_back({{"role", "user"}, {"content", text}});
  nlohmann::json body = {{"model", model_}, {"messages", messages}, {"stream", true}};
  SseEvents parser;
  std::string reply;
  bool done = false;
  std::optional<std::string> error;
  auto on_event = [&](const SseEvent& e) {
    if (e.data == "[DONE]") {
      done = true;
      return;
    }
    auto chunk = nlohmann::json::parse(e.data, nullptr, false);
    if (!chunk.is_object()) {
      return;
    }
    if (chunk.contains("error")) {
      const auto& err = chunk["error"];
      error = err.is_object() ? err.value("message", err.dump())
                              : (err.is_string() ? err.get<std::string>() : err.dump());
      return;
    }
    if (!chunk.contains("choices") || !chunk["choices"].is_array() || chunk["choices"].empty()) {
      return;
    }
    const auto& choice = chunk["choices"][0];
    if (!choice.contains("delta") || !choice["delta"].is_object()) {
      return;
    }
    const auto& delta = choice["delta"];
    if (auto it = delta.find("reasoning_content"); it != delta.end() && it->is_string()) {
      on_text(it->get_ref<const std::string&>(), true);
    }
    if (auto it = delta.find("content"); it != delta.end() && it->is_string()) {
      reply += it->get_ref<const std::string&>();
      on_text(it->get_ref<const std::string&>(), false);
    }
  };
  auto result = client_.stream(
      "/api/v1/chat/completions", body,
      [&](std::string_view bytes) {
        parser.feed(bytes, on_event);
        return true;
      },
      stop);
  if (result.aborted) {
    return Error(ErrorCode::kCancelled, "stopped");
  }
  if (!result.ok()) {
    return Error(ErrorCode::kNetworkError, result.error_text());
  }
  if (error) {
    return Error(ErrorCode::kNetworkError, *error);
  }
  if (!done) {
    return Error(ErrorCode::kNetworkError,
                 result.transport_error.empty() ? "the reply ended early" : result.transport_error);
  }
  messages_ = std::move(messages);
  messages_.push_back({{"role", "assistant"}, {"content", reply}});
  return reply;
}

}  // namespace lemon::cli
