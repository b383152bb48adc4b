#include "session_turn.h"

namespace lemon::api {

bool TurnRecorder::send(int status, const net::Headers& headers, std::string_view body) {
  if (status == 200) {
    auto j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_object()) {
      if (auto c = j.find("choices"); c != j.end() && c->is_array() && !c->empty()) {
        const auto& message = (*c)[0].value("message", nlohmann::json::object());
        if (message.contains("content") && message["content"].is_string()) {
          reply_ += message["content"].get<std::string>();
        }
      }
      figures(j);
    } else {
      failed_ = true;
    }
  } else {
    failed_ = true;
  }
  complete();
  return inner_.send(status, headers, body);
}

bool TurnRecorder::write_chunk(std::string_view data) {
  pending_.append(data);
  for (auto end = pending_.find("\n\n"); end != std::string::npos; end = pending_.find("\n\n")) {
    event(std::string_view(pending_).substr(0, end));
    pending_.erase(0, end + 2);
  }
  return inner_.write_chunk(data);
}

void TurnRecorder::complete() {
  if (completed_) {
    return;
  }
  completed_ = true;
  if (failed_) {
    done_(std::nullopt);
    return;
  }
  TurnResult r;
  r.reply = reply_;
  r.prompt_tokens = prompt_tokens_;
  r.cached_tokens = cached_tokens_;
  r.completion_tokens = completion_tokens_;
  done_(r);
}

void TurnRecorder::event(std::string_view text) {
  constexpr std::string_view kData = "data: ";
  if (!text.starts_with(kData)) {
    return;
  }
  text.remove_prefix(kData.size());
  if (text == "[DONE]") {
    complete();
    return;
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) {
    return;
  }
  if (j.contains("error")) {
    failed_ = true;  // the stream broke: the reply is not kept
    return;
  }
  if (auto c = j.find("choices"); c != j.end() && c->is_array() && !c->empty()) {
    const auto& delta = (*c)[0].value("delta", nlohmann::json::object());
    if (delta.contains("content") && delta["content"].is_string()) {
      reply_ += delta["content"].get<std::string>();
    }
  }
  figures(j);
}

void TurnRecorder::figures(const nlohmann::json& j) {
  if (auto t = j.find("timings"); t != j.end() && t->is_object()) {
    const std::int64_t evaluated = t->value("prompt_n", std::int64_t{0});
    cached_tokens_ = t->value("cache_n", std::int64_t{0});
    prompt_tokens_ = evaluated + cached_tokens_;
    completion_tokens_ = t->value("predicted_n", std::int64_t{0});
  } else if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    prompt_tokens_ = u->value("prompt_tokens", std::int64_t{0});
    completion_tokens_ = u->value("completion_tokens", std::int64_t{0});
  }
}

}  // namespace lemon::api
