// AnthropicAnswer: a Messages API answer built from the
// backend's chat completion chunks (see chat_answer.h).
//
// Streaming, Anthropic's event sequence: message_start and a ping when the
// stream opens (a ping per keepalive while the model loads), then per block
// content_block_start, content_block_delta (text_delta, thinking_delta for
// reasoning_content, input_json_delta for each tool call argument fragment)
// and content_block_stop, then message_delta (stop_reason, stop_sequence,
// usage) and message_stop. Otherwise one message object:
//   {"id","type":"message","role":"assistant","model","content":[...],
//    "stop_reason","stop_sequence","usage":{"input_tokens","output_tokens"}}
// stop_reason: stop -> end_turn, length -> max_tokens, tool_calls (or any
// tool call) -> tool_use, a stop sequence -> stop_sequence. Stop sequences
// are matched here, in the text as it streams: text that may be the start
// of one is held back until it is known not to be.
//
// Thread-safety: one request's; used by its connection thread only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lemon/inference/chat_answer.h"

namespace lemon::api {

class AnthropicAnswer final : public inference::ChatAnswer {
 public:
  // `model` as the client named it; `id` the message id ("msg_...").
  AnthropicAnswer(std::string model, std::string id, std::vector<std::string> stop_sequences,
                  bool streaming);

  bool streaming() const override { return streaming_; }
  std::string content_type() const override { return "text/event-stream"; }
  std::string open() override;
  std::string keepalive() override;
  std::string chunk(const nlohmann::json& chunk, Clock::time_point now) override;
  bool complete() const override { return stop_sequence_.has_value(); }
  std::string close(Clock::time_point now) override;
  Result<nlohmann::json> whole(Clock::time_point now) override;

  // A fresh message id: "msg_" and 24 random hex digits.
  static std::string new_id();

 private:
  enum class Block { kNone, kText, kThinking, kToolUse };
  // Opens a block of `kind` (closing the open one) unless it is open.
  std::string start_block(Block kind, const nlohmann::json& content_block);
  std::string stop_block();
  std::string emit_text(const std::string& text);
  std::string on_text(const std::string& text);
  std::string flush_text();
  std::string on_tool_call(const nlohmann::json& call);
  std::string stop_reason() const;

  const std::string model_;
  const std::string id_;
  const std::vector<std::string> stops_;
  const bool streaming_;

  Block open_ = Block::kNone;
  int index_ = -1;                                   // the open block's index
  int tool_index_ = -1;                              // the OpenAI index of the open tool call
  std::string held_;                                 // text that may start a stop sequence
  nlohmann::json blocks_ = nlohmann::json::array();  // collected (whole())
  std::vector<std::string> tool_arguments_;          // per tool_use block, in order
  std::string finish_reason_;
  std::optional<std::string> stop_sequence_;
  bool saw_tool_call_ = false;
  bool closed_ = false;
  int input_tokens_ = 0;
  int output_tokens_ = 0;
  int deltas_ = 0;  // content deltas seen (output tokens when no usage arrives)
};

}  // namespace lemon::api
