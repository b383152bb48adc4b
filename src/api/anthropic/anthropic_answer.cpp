#include "lemon/api/anthropic/anthropic_answer.h"

#include <algorithm>
#include <random>

#include "lemon/http/error_response.h"
#include "lemon/http/handler_support.h"

namespace lemon::api {

using inference::tokens_from_chunk;
namespace {

using nlohmann::json;

std::string event(const char* type, const json& data) {
  return std::string("event: ") + type + "\ndata: " + json_text(data) + "\n\n";
}

}  // namespace

AnthropicAnswer::AnthropicAnswer(std::string model, std::string id,
                                 std::vector<std::string> stop_sequences, bool streaming)
    : model_(std::move(model)),
      id_(std::move(id)),
      stops_(std::move(stop_sequences)),
      streaming_(streaming) {}

std::string AnthropicAnswer::new_id() {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "msg_";
  for (int i = 0; i < 24; ++i) {
    id += kHex[gen() % 16];
  }
  return id;
}

std::string AnthropicAnswer::open() {
  json message = {{"id", id_},
                  {"type", "message"},
                  {"role", "assistant"},
                  {"model", model_},
                  {"content", json::array()},
                  {"stop_reason", nullptr},
                  {"stop_sequence", nullptr},
                  {"usage", {{"input_tokens", 0}, {"output_tokens", 0}}}};
  return event("message_start", {{"type", "message_start"}, {"message", std::move(message)}}) +
         keepalive();
}

std::string AnthropicAnswer::keepalive() {
  return event("ping", {{"type", "ping"}});
}

std::string AnthropicAnswer::stop_block() {
  if (open_ == Block::kNone) {
    return "";
  }
  open_ = Block::kNone;
  tool_index_ = -1;
  if (!streaming_) {
    return "";
  }
  return event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_}});
}

std::string AnthropicAnswer::start_block(Block kind, const json& content_block) {
  if (open_ == kind && kind != Block::kToolUse) {
    return "";
  }
  std::string out = stop_block();
  open_ = kind;
  ++index_;
  blocks_.push_back(content_block);
  if (kind == Block::kToolUse) {
    tool_arguments_.emplace_back();
  }
  if (streaming_) {
    out += event(
        "content_block_start",
        {{"type", "content_block_start"}, {"index", index_}, {"content_block", content_block}});
  }
  return out;
}

std::string AnthropicAnswer::emit_text(const std::string& text) {
  if (text.empty()) {
    return "";
  }
  std::string out = start_block(Block::kText, {{"type", "text"}, {"text", ""}});
  blocks_.back()["text"].get_ref<std::string&>() += text;
  if (streaming_) {
    out += event("content_block_delta", {{"type", "content_block_delta"},
                                         {"index", index_},
                                         {"delta", {{"type", "text_delta"}, {"text", text}}}});
  }
  return out;
}

std::string AnthropicAnswer::on_text(const std::string& text) {
  if (stops_.empty()) {
    return emit_text(text);
  }
  held_ += text;
  std::size_t best = std::string::npos;
  const std::string* which = nullptr;
  for (const auto& s : stops_) {
    if (std::size_t pos = held_.find(s); pos < best) {
      best = pos;
      which = &s;
    }
  }
  if (which != nullptr) {
    std::string out = emit_text(held_.substr(0, best));
    held_.clear();
    stop_sequence_ = *which;
    return out;
  }
  // Hold back the longest end of the text that begins a stop sequence.
  std::size_t keep = 0;
  for (const auto& s : stops_) {
    for (std::size_t k = std::min(s.size() - 1, held_.size()); k > keep; --k) {
      if (held_.compare(held_.size() - k, k, s, 0, k) == 0) {
        keep = k;
        break;
      }
    }
  }
  std::string out = emit_text(held_.substr(0, held_.size() - keep));
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string AnthropicAnswer::flush_text() {
  std::string out = emit_text(held_);
  held_.clear();
  return out;
}

std::string AnthropicAnswer::on_tool_call(const json& call) {
  if (!call.is_object()) {
    return "";
  }
  const int index = call.value("index", 0);
  std::string out = flush_text();
  const json* function = nullptr;
  if (auto f = call.find("function"); f != call.end() && f->is_object()) {
    function = &*f;
  }
  if (open_ != Block::kToolUse || index != tool_index_) {
    std::string id = call.value("id", "");
    if (id.empty()) {
      id = "toolu_" + id_.substr(4) + "_" + std::to_string(index);
    }
    std::string name = function != nullptr ? function->value("name", "") : "";
    out += stop_block();
    out += start_block(Block::kToolUse, {{"type", "tool_use"},
                                         {"id", std::move(id)},
                                         {"name", std::move(name)},
                                         {"input", json::object()}});
    tool_index_ = index;
    saw_tool_call_ = true;
  }
  if (function == nullptr) {
    return out;
  }
  std::string fragment;
  if (auto args = function->find("arguments"); args != function->end()) {
    fragment = args->is_string() ? args->get<std::string>() : args->is_null() ? "" : args->dump();
  }
  if (!fragment.empty()) {
    tool_arguments_.back() += fragment;
    if (streaming_) {
      out += event("content_block_delta",
                   {{"type", "content_block_delta"},
                    {"index", index_},
                    {"delta", {{"type", "input_json_delta"}, {"partial_json", fragment}}}});
    }
  }
  return out;
}

std::string AnthropicAnswer::chunk(const json& chunk, Clock::time_point /*now*/) {
  if (closed_ || complete() || !chunk.is_object()) {
    return "";
  }
  tokens_from_chunk(chunk, input_tokens_, output_tokens_);
  auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array() || choices->empty() ||
      !(*choices)[0].is_object()) {
    return "";
  }
  const json& choice = (*choices)[0];
  std::string out;
  if (auto delta = choice.find("delta"); delta != choice.end() && delta->is_object()) {
    if (auto r = delta->find("reasoning_content");
        r != delta->end() && r->is_string() && !r->get_ref<const std::string&>().empty()) {
      out += flush_text();
      out += start_block(Block::kThinking,
                         {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
      blocks_.back()["thinking"].get_ref<std::string&>() += r->get<std::string>();
      if (streaming_) {
        out += event("content_block_delta",
                     {{"type", "content_block_delta"},
                      {"index", index_},
                      {"delta", {{"type", "thinking_delta"}, {"thinking", *r}}}});
      }
      ++deltas_;
    }
    if (auto c = delta->find("content");
        c != delta->end() && c->is_string() && !c->get_ref<const std::string&>().empty()) {
      out += on_text(c->get<std::string>());
      ++deltas_;
    }
    if (auto calls = delta->find("tool_calls"); calls != delta->end() && calls->is_array()) {
      for (const auto& call : *calls) {
        out += on_tool_call(call);
      }
      ++deltas_;
    }
  }
  if (auto f = choice.find("finish_reason"); f != choice.end() && f->is_string()) {
    finish_reason_ = f->get<std::string>();
    if (!complete()) {
      out += flush_text();
    }
  }
  return out;
}

std::string AnthropicAnswer::stop_reason() const {
  if (stop_sequence_) {
    return "stop_sequence";
  }
  if (saw_tool_call_ || finish_reason_ == "tool_calls") {
    return "tool_use";
  }
  if (finish_reason_ == "length") {
    return "max_tokens";
  }
  return "end_turn";
}

std::string AnthropicAnswer::close(Clock::time_point /*now*/) {
  if (closed_) {
    return "";
  }
  closed_ = true;
  std::string out = complete() ? "" : flush_text();
  out += stop_block();
  json usage = {{"input_tokens", input_tokens_},
                {"output_tokens", output_tokens_ > 0 ? output_tokens_ : deltas_}};
  out += event("message_delta",
               {{"type", "message_delta"},
                {"delta",
                 {{"stop_reason", stop_reason()},
                  {"stop_sequence", stop_sequence_ ? json(*stop_sequence_) : json(nullptr)}}},
                {"usage", std::move(usage)}});
  out += event("message_stop", {{"type", "message_stop"}});
  return out;
}

Result<json> AnthropicAnswer::whole(Clock::time_point /*now*/) {
  if (!complete()) {
    flush_text();
  }
  stop_block();
  closed_ = true;
  json content = json::array();
  std::size_t tool = 0;
  for (const auto& block : blocks_) {
    json b = block;
    if (b.value("type", "") == "tool_use") {
      const std::string& args = tool_arguments_[tool++];
      json input = args.empty() ? json::object() : json::parse(args, nullptr, false);
      if (!input.is_object()) {
        return Error(ErrorCode::kUpstreamProtocol, "the backend's arguments for tool '" +
                                                       b.value("name", "") +
                                                       "' are not a JSON object: " + args);
      }
      b["input"] = std::move(input);
    }
    content.push_back(std::move(b));
  }
  return json{{"id", id_},
              {"type", "message"},
              {"role", "assistant"},
              {"model", model_},
              {"content", std::move(content)},
              {"stop_reason", stop_reason()},
              {"stop_sequence", stop_sequence_ ? json(*stop_sequence_) : json(nullptr)},
              {"usage",
               {{"input_tokens", input_tokens_},
                {"output_tokens", output_tokens_ > 0 ? output_tokens_ : deltas_}}}};
}

}  // namespace lemon::api
