// Repairs of a chat's messages that a model's template rejected (message
// sanitization). The router applies them once, after
// the backend refused the chat with a template error (BackendRejection::
// kTemplate), and retries; the answer then carries X-Lemonade-Sanitized: 1.
//
//  - An assistant turn with tool_calls that carries both `content` and its
//    reasoning (`thinking` or `reasoning_content`): the content is appended
//    to the reasoning and the `content` key removed.
//  - System messages that are not first: all of them become one system
//    message at the front, their texts joined in order.
//  - Consecutive user turns, or consecutive assistant turns without tool
//    calls: merged into one, texts joined with a blank line (content-part
//    arrays are concatenated). Tool results are never merged.
//
// Thread-safety: pure function over its argument.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace lemon::inference {

struct MessageRepair {
  int merged_reasoning = 0;  // assistant turns whose content went into their reasoning
  int moved_system = 0;      // system messages moved to the front
  int merged_turns = 0;      // turns merged into the one before
  bool changed() const { return merged_reasoning + moved_system + merged_turns > 0; }
  std::string describe() const;  // for the log
};

// Repairs `messages` (a chat's "messages" array) in place. Anything that is
// not an array of objects is left alone.
MessageRepair repair_chat_messages(nlohmann::json& messages);

}  // namespace lemon::inference
