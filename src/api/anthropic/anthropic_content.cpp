// Anthropic's message content, as chat messages: text, image, tool_use,
// tool_result and thinking blocks, and the system prompt.
#include "anthropic_content.h"

#include "lemon/http/request_fields.h"

#include "lemon/http/handler_support.h"
namespace lemon::api::anthropic {

using nlohmann::json;

constexpr std::string_view kAnthropicApi = "Messages API";

std::optional<std::string> string_at(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string()) {
    return std::nullopt;
  }
  return it->get<std::string>();
}

std::string block_type(const json& block) {
  return string_at(block, "type").value_or("");
}

namespace {

Result<std::string> text_of(const json& block, const std::string& where) {
  if (auto e = unknown_key(block, {"type", "text", "cache_control", "citations"}, where,
                           kAnthropicApi)) {
    return *e;
  }
  if (auto c = block.find("citations");
      c != block.end() && !c->is_null() && !(c->is_array() && c->empty())) {
    return bad_field("'" + where + ".citations' is not supported", where + ".citations");
  }
  auto text = string_at(block, "text");
  if (!text) {
    return bad_field("'" + where + ".text' must be a string", where + ".text");
  }
  return *text;
}

}  // namespace

Result<std::string> system_text(const json& system) {
  if (system.is_string()) {
    return system.get<std::string>();
  }
  if (!system.is_array()) {
    return bad_field("'system' must be a string or an array of text blocks", "system");
  }
  std::string out;
  for (std::size_t i = 0; i < system.size(); ++i) {
    const std::string where = indexed("system", i);
    if (!system[i].is_object() || block_type(system[i]) != "text") {
      return bad_field("'" + where + "' must be a text block", where);
    }
    auto text = text_of(system[i], where);
    if (!text.ok()) {
      return std::move(text).error();
    }
    if (!out.empty()) {
      out += "\n\n";
    }
    out += *text;
  }
  return out;
}

namespace {

Result<json> image_part(const json& block, const std::string& where) {
  if (auto e = unknown_key(block, {"type", "source", "cache_control"}, where, kAnthropicApi)) {
    return *e;
  }
  auto source = block.find("source");
  if (source == block.end() || !source->is_object()) {
    return bad_field("'" + where + ".source' must be an object", where + ".source");
  }
  const std::string kind = block_type(*source);
  if (kind == "url") {
    return bad_field(
        "image sources of type 'url' are not supported (the router fetches nothing); send "
        "the image as base64",
        where + ".source.type");
  }
  if (kind != "base64") {
    return bad_field("'" + where + ".source.type' must be 'base64'", where + ".source.type");
  }
  if (auto e =
          unknown_key(*source, {"type", "media_type", "data"}, where + ".source", kAnthropicApi)) {
    return *e;
  }
  auto media = string_at(*source, "media_type");
  auto data = string_at(*source, "data");
  if (!media || media->rfind("image/", 0) != 0) {
    return bad_field("'" + where + ".source.media_type' must be an image type such as image/png",
                     where + ".source.media_type");
  }
  if (!data || data->empty()) {
    return bad_field("'" + where + ".source.data' must be base64 text", where + ".source.data");
  }
  return json{{"type", "image_url"},
              {"image_url", {{"url", "data:" + *media + ";base64," + *data}}}};
}

// A tool_result's content (a string or text blocks) as one text.
Result<json> tool_message(const json& block, const std::string& where) {
  if (auto e = unknown_key(block, {"type", "tool_use_id", "content", "is_error", "cache_control"},
                           where, kAnthropicApi)) {
    return *e;
  }
  auto id = string_at(block, "tool_use_id");
  if (!id || id->empty()) {
    return bad_field("'" + where + ".tool_use_id' must be a string", where + ".tool_use_id");
  }
  std::string text;
  auto content = block.find("content");
  if (content != block.end() && content->is_string()) {
    text = content->get<std::string>();
  } else if (content != block.end() && content->is_array()) {
    for (std::size_t i = 0; i < content->size(); ++i) {
      const std::string inner = indexed(where + ".content", i);
      const json& part = (*content)[i];
      if (!part.is_object() || block_type(part) != "text") {
        return bad_field(
            "'" + inner +
                "': only text blocks are supported inside a tool_result (an OpenAI tool "
                "message carries text)",
            inner);
      }
      auto t = text_of(part, inner);
      if (!t.ok()) {
        return std::move(t).error();
      }
      text += (text.empty() ? "" : "\n") + *t;
    }
  } else if (content != block.end() && !content->is_null()) {
    return bad_field("'" + where + ".content' must be a string or an array of text blocks",
                     where + ".content");
  }
  auto is_error = block.find("is_error");
  if (is_error != block.end() && !is_error->is_null() && !is_error->is_boolean()) {
    return bad_field("'" + where + ".is_error' must be a boolean", where + ".is_error");
  }
  if (is_error != block.end() && is_error->is_boolean() && is_error->get<bool>()) {
    text = "Error: " + text;
  }
  return json{{"role", "tool"}, {"tool_call_id", *id}, {"content", text}};
}

Result<json> tool_call(const json& block, const std::string& where) {
  if (auto e = unknown_key(block, {"type", "id", "name", "input", "cache_control"}, where,
                           kAnthropicApi)) {
    return *e;
  }
  auto id = string_at(block, "id");
  auto name = string_at(block, "name");
  auto input = block.find("input");
  if (!id || id->empty()) {
    return bad_field("'" + where + ".id' must be a string", where + ".id");
  }
  if (!name || name->empty()) {
    return bad_field("'" + where + ".name' must be a string", where + ".name");
  }
  if (input == block.end() || !input->is_object()) {
    return bad_field("'" + where + ".input' must be an object", where + ".input");
  }
  return json{{"id", *id},
              {"type", "function"},
              {"function", {{"name", *name}, {"arguments", input->dump()}}}};
}

Error unsupported_block(const std::string& type, const std::string& where) {
  if (type == "document") {
    return bad_field("document blocks are not supported: send the document's text",
                     where + ".type");
  }
  if (type == "redacted_thinking") {
    return bad_field("redacted_thinking blocks are not supported (this server never produces them)",
                     where + ".type");
  }
  return bad_field("content blocks of type '" + type + "' are not supported here", where + ".type");
}

// One user message: its tool results become tool messages (first, as the
// chat format wants them right after the assistant's calls), the rest one
// user message.
Status user_turn(const json& blocks, const std::string& where, json& out, bool& has_images) {
  json parts = json::array();
  bool only_text = true;
  for (std::size_t j = 0; j < blocks.size(); ++j) {
    const std::string bw = indexed(where + ".content", j);
    const json& block = blocks[j];
    if (!block.is_object()) {
      return bad_field("'" + bw + "' must be a content block", bw);
    }
    const std::string type = block_type(block);
    if (type == "text") {
      auto text = text_of(block, bw);
      if (!text.ok()) {
        return std::move(text).error();
      }
      parts.push_back({{"type", "text"}, {"text", *text}});
    } else if (type == "image") {
      auto part = image_part(block, bw);
      if (!part.ok()) {
        return std::move(part).error();
      }
      parts.push_back(std::move(part).value());
      only_text = false;
      has_images = true;
    } else if (type == "tool_result") {
      auto tool = tool_message(block, bw);
      if (!tool.ok()) {
        return std::move(tool).error();
      }
      out.push_back(std::move(tool).value());
    } else if (type == "tool_use" || type == "thinking") {
      std::string why = "'" + bw + "': ";
      why += type;
      why += " blocks belong to assistant messages";
      return bad_field(why, bw + ".type");
    } else {
      return unsupported_block(type, bw);
    }
  }
  if (parts.empty()) {
    return ok_status();
  }
  if (only_text && parts.size() == 1) {
    out.push_back({{"role", "user"}, {"content", parts[0]["text"]}});
  } else {
    out.push_back({{"role", "user"}, {"content", std::move(parts)}});
  }
  return ok_status();
}

Status assistant_turn(const json& blocks, const std::string& where, json& out) {
  std::string text;
  std::string reasoning;
  json calls = json::array();
  for (std::size_t j = 0; j < blocks.size(); ++j) {
    const std::string bw = indexed(where + ".content", j);
    const json& block = blocks[j];
    if (!block.is_object()) {
      return bad_field("'" + bw + "' must be a content block", bw);
    }
    const std::string type = block_type(block);
    if (type == "text") {
      auto t = text_of(block, bw);
      if (!t.ok()) {
        return std::move(t).error();
      }
      text += *t;
    } else if (type == "tool_use") {
      auto call = tool_call(block, bw);
      if (!call.ok()) {
        return std::move(call).error();
      }
      calls.push_back(std::move(call).value());
    } else if (type == "thinking") {
      if (auto e = unknown_key(block, {"type", "thinking", "signature"}, bw, kAnthropicApi)) {
        return *e;
      }
      auto t = string_at(block, "thinking");
      if (!t) {
        return bad_field("'" + bw + ".thinking' must be a string", bw + ".thinking");
      }
      reasoning += *t;
    } else if (type == "image" || type == "tool_result") {
      std::string why = "'" + bw + "': ";
      why += type;
      why += " blocks belong to user messages";
      return bad_field(why, bw + ".type");
    } else {
      return unsupported_block(type, bw);
    }
  }
  json message = {{"role", "assistant"}};
  message["content"] = text.empty() && !calls.empty() ? json(nullptr) : json(text);
  if (!calls.empty()) {
    message["tool_calls"] = std::move(calls);
  }
  if (!reasoning.empty()) {
    message["reasoning_content"] = std::move(reasoning);
  }
  out.push_back(std::move(message));
  return ok_status();
}

}  // namespace

Status messages_of(const json& body, json& out, bool& has_images) {
  auto messages = body.find("messages");
  if (messages == body.end() || !messages->is_array() || messages->empty()) {
    return bad_field("'messages' is required and must be a non-empty array", "messages");
  }
  for (std::size_t i = 0; i < messages->size(); ++i) {
    const std::string where = indexed("messages", i);
    const json& m = (*messages)[i];
    if (!m.is_object()) {
      return bad_field("'" + where + "' must be an object", where);
    }
    if (auto e = unknown_key(m, {"role", "content"}, where, kAnthropicApi)) {
      return *e;
    }
    auto role = string_at(m, "role");
    if (!role || (*role != "user" && *role != "assistant")) {
      return bad_field("'" + where + ".role' must be 'user' or 'assistant'", where + ".role");
    }
    auto content = m.find("content");
    if (content != m.end() && content->is_string()) {
      out.push_back({{"role", *role}, {"content", *content}});
      continue;
    }
    if (content == m.end() || !content->is_array()) {
      return bad_field("'" + where + ".content' must be a string or an array of content blocks",
                       where + ".content");
    }
    Status s = *role == "user" ? user_turn(*content, where, out, has_images)
                               : assistant_turn(*content, where, out);
    if (!s.ok()) {
      return s;
    }
  }
  return ok_status();
}

}  // namespace lemon::api::anthropic
