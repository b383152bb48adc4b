#include "lemon/api/anthropic/anthropic_request.h"
#include "anthropic_content.h"
#include "lemon/http/handler_support.h"
#include "lemon/http/request_fields.h"

#include <algorithm>
#include <initializer_list>
#include <optional>

namespace lemon::api {

namespace {

using anthropic::block_type;
using anthropic::messages_of;
using anthropic::string_at;
using anthropic::system_text;
using nlohmann::json;

constexpr std::string_view kAnthropicApi = "Messages API";

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
