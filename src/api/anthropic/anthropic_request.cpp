#include "lemon/api/anthropic/anthropic_request.h"
#include "lemon/http/request_fields.h"

#include <algorithm>
#include <initializer_list>
#include <optional>

namespace lemon::api {

using http::bad_field;
using http::indexed;
using http::unknown_key;
namespace {

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

Status tools_of(const json& body, json& chat) {
  auto tools = body.find("tools");
  if (tools == body.end() || tools->is_null()) {
    return ok_status();
  }
  if (!tools->is_array()) {
    return bad_field("'tools' must be an array", "tools");
  }
  json out = json::array();
  for (std::size_t i = 0; i < tools->size(); ++i) {
    const std::string where = indexed("tools", i);
    const json& t = (*tools)[i];
    if (!t.is_object()) {
      return bad_field("'" + where + "' must be an object", where);
    }
    auto type = string_at(t, "type");
    if (type && *type != "custom") {
      return bad_field(
          "'" + where + "': server tools ('" + *type +
              "') are not supported; define the tool with a name and an input_schema and "
              "run it in the client",
          where + ".type");
    }
    if (auto e = unknown_key(t, {"type", "name", "description", "input_schema", "cache_control"},
                             where, kAnthropicApi)) {
      return *e;
    }
    auto name = string_at(t, "name");
    if (!name || name->empty()) {
      return bad_field("'" + where + ".name' must be a string", where + ".name");
    }
    auto schema = t.find("input_schema");
    if (schema == t.end() || !schema->is_object()) {
      return bad_field("'" + where + ".input_schema' must be a JSON schema object",
                       where + ".input_schema");
    }
    json function = {{"name", *name}, {"parameters", *schema}};
    if (auto description = t.find("description"); description != t.end()) {
      if (!description->is_string()) {
        return bad_field("'" + where + ".description' must be a string", where + ".description");
      }
      function["description"] = *description;
    }
    out.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  if (!out.empty()) {
    chat["tools"] = std::move(out);
  }
  return ok_status();
}

Status tool_choice_of(const json& body, json& chat) {
  auto choice = body.find("tool_choice");
  if (choice == body.end() || choice->is_null()) {
    return ok_status();
  }
  if (!choice->is_object()) {
    return bad_field("'tool_choice' must be an object", "tool_choice");
  }
  if (auto e = unknown_key(*choice, {"type", "name", "disable_parallel_tool_use"}, "tool_choice",
                           kAnthropicApi)) {
    return *e;
  }
  const std::string type = block_type(*choice);
  if (type == "auto") {
    chat["tool_choice"] = "auto";
  } else if (type == "any") {
    chat["tool_choice"] = "required";
  } else if (type == "none") {
    chat["tool_choice"] = "none";
  } else if (type == "tool") {
    auto name = string_at(*choice, "name");
    if (!name || name->empty()) {
      return bad_field("'tool_choice.name' is required with type 'tool'", "tool_choice.name");
    }
    chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", *name}}}};
  } else {
    return bad_field("'tool_choice.type' must be auto, any, tool or none", "tool_choice.type");
  }
  if (auto dp = choice->find("disable_parallel_tool_use"); dp != choice->end() && !dp->is_null()) {
    if (!dp->is_boolean()) {
      return bad_field("'tool_choice.disable_parallel_tool_use' must be a boolean",
                       "tool_choice.disable_parallel_tool_use");
    }
    if (dp->get<bool>()) {
      chat["parallel_tool_calls"] = false;
    }
  }
  return ok_status();
}

Status thinking_of(const json& body, json& chat) {
  auto thinking = body.find("thinking");
  if (thinking == body.end() || thinking->is_null()) {
    return ok_status();
  }
  if (!thinking->is_object()) {
    return bad_field("'thinking' must be an object", "thinking");
  }
  if (auto e = unknown_key(*thinking, {"type", "budget_tokens"}, "thinking", kAnthropicApi)) {
    return *e;
  }
  const std::string type = block_type(*thinking);
  if (type != "enabled" && type != "disabled") {
    return bad_field("'thinking.type' must be 'enabled' or 'disabled'", "thinking.type");
  }
  if (auto budget = thinking->find("budget_tokens");
      budget != thinking->end() && !budget->is_null() && !budget->is_number_integer()) {
    return bad_field("'thinking.budget_tokens' must be an integer", "thinking.budget_tokens");
  }
  chat["chat_template_kwargs"] = {{"enable_thinking", type == "enabled"}};
  return ok_status();
}

Status number_in(const json& body, const char* key, double lo, double hi, json& chat) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) {
    return ok_status();
  }
  if (!it->is_number() || it->get<double>() < lo || it->get<double>() > hi) {
    return bad_field(std::string("'") + key + "' must be a number from " + json(lo).dump() +
                         " to " + json(hi).dump(),
                     key);
  }
  chat[key] = *it;
  return ok_status();
}

Result<AnthropicRequest> translate(const json& body, bool counting) {
  AnthropicRequest out;
  // Two calls, not one list chosen by a conditional: an initializer_list's
  // array lives only as long as the expression that creates it.
  const std::optional<Error> unknown =
      counting
          ? unknown_key(body, {"model", "messages", "system", "tools", "tool_choice", "thinking"},
                        "", kAnthropicApi)
          : unknown_key(body,
                        {"model", "messages", "max_tokens", "system", "stop_sequences", "stream",
                         "temperature", "top_p", "top_k", "tools", "tool_choice", "thinking",
                         "metadata", "service_tier"},
                        "", kAnthropicApi);
  if (unknown) {
    return *unknown;
  }
  auto model = string_at(body, "model");
  if (!model || model->empty()) {
    return bad_field("'model' is required and must be a string", "model");
  }
  out.model = *model;
  json chat = {{"model", *model}};
  json messages = json::array();
  if (auto system = body.find("system"); system != body.end() && !system->is_null()) {
    auto text = system_text(*system);
    if (!text.ok()) {
      return std::move(text).error();
    }
    messages.push_back({{"role", "system"}, {"content", *text}});
  }
  if (Status s = messages_of(body, messages, out.has_images); !s.ok()) {
    return std::move(s).error();
  }
  chat["messages"] = std::move(messages);
  if (!counting) {
    auto max = body.find("max_tokens");
    if (max == body.end() || max->is_null()) {
      return bad_field("'max_tokens' is required", "max_tokens");
    }
    if (!max->is_number_integer() || max->get<long long>() < 1) {
      return bad_field("'max_tokens' must be a positive integer", "max_tokens");
    }
    chat["max_tokens"] = *max;
    if (auto stream = body.find("stream"); stream != body.end() && !stream->is_null()) {
      if (!stream->is_boolean()) {
        return bad_field("'stream' must be a boolean", "stream");
      }
      out.stream = stream->get<bool>();
    }
    if (auto stops = body.find("stop_sequences"); stops != body.end() && !stops->is_null()) {
      if (!stops->is_array()) {
        return bad_field("'stop_sequences' must be an array of strings", "stop_sequences");
      }
      for (const auto& s : *stops) {
        if (!s.is_string() || s.get_ref<const std::string&>().empty()) {
          return bad_field("'stop_sequences' must hold non-empty strings", "stop_sequences");
        }
        out.stop_sequences.push_back(s.get<std::string>());
      }
    }
    for (Status s : {number_in(body, "temperature", 0.0, 1.0, chat),
                     number_in(body, "top_p", 0.0, 1.0, chat)}) {
      if (!s.ok()) {
        return std::move(s).error();
      }
    }
    if (auto k = body.find("top_k"); k != body.end() && !k->is_null()) {
      if (!k->is_number_integer() || k->get<long long>() < 0) {
        return bad_field("'top_k' must be a non-negative integer", "top_k");
      }
      chat["top_k"] = *k;
    }
    if (auto meta = body.find("metadata"); meta != body.end() && !meta->is_null()) {
      if (!meta->is_object()) {
        return bad_field("'metadata' must be an object", "metadata");
      }
    }
    if (auto tier = body.find("service_tier"); tier != body.end() && !tier->is_null()) {
      if (!tier->is_string()) {
        return bad_field("'service_tier' must be a string", "service_tier");
      }
    }
    chat["stream"] = true;
    chat["stream_options"] = {{"include_usage", true}};
  }
  for (Status s : {tools_of(body, chat), tool_choice_of(body, chat), thinking_of(body, chat)}) {
    if (!s.ok()) {
      return std::move(s).error();
    }
  }
  out.chat = std::move(chat);
  return out;
}

// The text of one chat message's content (a string or parts).
Result<std::string> content_text(const json& message, std::size_t index) {
  const json& content = message["content"];
  if (content.is_string()) {
    return content.get<std::string>();
  }
  std::string out;
  if (content.is_array()) {
    for (const auto& part : content) {
      if (part.value("type", "") != "text") {
        const std::string where = indexed("messages", index);
        return bad_field(
            "count_tokens cannot count images: llama-server's /tokenize takes text only", where);
      }
      out += part.value("text", "");
    }
  }
  return out;
}

}  // namespace

Result<AnthropicRequest> anthropic_to_chat(const json& body) {
  return translate(body, false);
}

Result<AnthropicCountRequest> anthropic_count_tokens_text(const json& body) {
  auto request = translate(body, true);
  if (!request.ok()) {
    return std::move(request).error();
  }
  AnthropicCountRequest out;
  out.model = request->model;
  const json& messages = request->chat["messages"];
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    auto text = content_text(m, i);
    if (!text.ok()) {
      return std::move(text).error();
    }
    out.text += m.value("role", "") + ": " + *text + "\n";
    if (auto r = m.find("reasoning_content"); r != m.end() && r->is_string()) {
      out.text += r->get<std::string>() + "\n";
    }
    if (auto calls = m.find("tool_calls"); calls != m.end()) {
      for (const auto& call : *calls) {
        out.text += call["function"].value("name", "") + " " +
                    call["function"].value("arguments", "") + "\n";
      }
    }
  }
  if (auto tools = request->chat.find("tools"); tools != request->chat.end()) {
    out.text += tools->dump() + "\n";
  }
  return out;
}

}  // namespace lemon::api
