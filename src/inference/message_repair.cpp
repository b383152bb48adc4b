#include "lemon/inference/message_repair.h"

#include <utility>

namespace lemon::inference {

namespace {

using nlohmann::json;

bool is_empty_content(const json& content) {
  return content.is_null() ||
         (content.is_string() && content.get_ref<const std::string&>().empty()) ||
         (content.is_array() && content.empty());
}

// A content value as an array of parts.
json as_parts(const json& content) {
  if (content.is_array()) {
    return content;
  }
  json parts = json::array();
  if (content.is_string() && !content.get_ref<const std::string&>().empty()) {
    parts.push_back({{"type", "text"}, {"text", content}});
  }
  return parts;
}

// The text of a content value (text parts joined).
std::string plain_text_of(const json& content) {
  if (content.is_string()) {
    return content.get<std::string>();
  }
  std::string out;
  if (content.is_array()) {
    for (const auto& part : content) {
      if (part.is_object() && part.value("type", "") == "text" && part.contains("text") &&
          part["text"].is_string()) {
        if (!out.empty()) {
          out += "\n\n";
        }
        out += part["text"].get<std::string>();
      }
    }
  }
  return out;
}

// `a` followed by `b`: strings joined with a blank line, otherwise parts.
json joined(const json& a, const json& b) {
  if (is_empty_content(a)) {
    return b;
  }
  if (is_empty_content(b)) {
    return a;
  }
  if (a.is_string() && b.is_string()) {
    return a.get<std::string>() + "\n\n" + b.get<std::string>();
  }
  json parts = as_parts(a);
  for (const auto& p : as_parts(b)) {
    parts.push_back(p);
  }
  return parts;
}

std::string role_of(const json& m) {
  auto it = m.find("role");
  return it != m.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool has_tool_calls(const json& m) {
  auto it = m.find("tool_calls");
  return it != m.end() && it->is_array() && !it->empty();
}

int merge_reasoning(json& messages) {
  int merged = 0;
  for (auto& m : messages) {
    if (role_of(m) != "assistant" || !has_tool_calls(m) || !m.contains("content") ||
        is_empty_content(m["content"])) {
      continue;
    }
    for (const char* key : {"thinking", "reasoning_content"}) {
      auto it = m.find(key);
      if (it == m.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
        continue;
      }
      *it = it->get<std::string>() + "\n\n" + plain_text_of(m["content"]);
      m.erase("content");
      ++merged;
      break;
    }
  }
  return merged;
}

int move_system_first(json& messages) {
  bool late = false;
  for (std::size_t i = 1; i < messages.size(); ++i) {
    late = late || role_of(messages[i]) == "system";
  }
  if (!late) {
    return 0;
  }
  json system = {{"role", "system"}, {"content", ""}};
  json rest = json::array();
  int moved = 0;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (role_of(messages[i]) == "system") {
      system["content"] = joined(system["content"], messages[i].value("content", json()));
      moved += i > 0 ? 1 : 0;
    } else {
      rest.push_back(std::move(messages[i]));
    }
  }
  json out = json::array({std::move(system)});
  for (auto& m : rest) {
    out.push_back(std::move(m));
  }
  messages = std::move(out);
  return moved;
}

bool mergeable(const json& m) {
  const std::string role = role_of(m);
  return (role == "user" || role == "assistant") && !has_tool_calls(m) &&
         !m.contains("tool_call_id");
}

int merge_consecutive(json& messages) {
  json out = json::array();
  int merged = 0;
  for (auto& m : messages) {
    if (!out.empty() && mergeable(m) && mergeable(out.back()) &&
        role_of(m) == role_of(out.back())) {
      auto& previous = out.back();
      previous["content"] = joined(previous.value("content", json()), m.value("content", json()));
      ++merged;
      continue;
    }
    out.push_back(std::move(m));
  }
  messages = std::move(out);
  return merged;
}

}  // namespace

std::string MessageRepair::describe() const {
  std::string out;
  auto add = [&](int n, const char* what) {
    if (n > 0) {
      out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + what;
    }
  };
  add(merged_reasoning,
      "assistant turn(s) with tool calls had their content merged into reasoning");
  add(moved_system, "system message(s) moved to the front");
  add(merged_turns, "consecutive turn(s) with the same role merged");
  return out.empty() ? "nothing changed" : out;
}

MessageRepair repair_chat_messages(json& messages) {
  MessageRepair r;
  if (!messages.is_array()) {
    return r;
  }
  for (const auto& m : messages) {
    if (!m.is_object()) {
      return r;
    }
  }
  r.merged_reasoning = merge_reasoning(messages);
  r.moved_system = move_system_first(messages);
  r.merged_turns = merge_consecutive(messages);
  return r;
}

}  // namespace lemon::inference
