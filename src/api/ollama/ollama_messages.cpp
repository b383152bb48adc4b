// Ollama's chat messages and images, as chat completions messages (issue
// #14 §4): base64 images become image_url parts, an assistant's tool_calls
// get ids and JSON-text arguments.
#include "ollama_messages.h"

#include "lemon/http/request_fields.h"

#include "lemon/http/handler_support.h"
namespace lemon::api::ollama {

using nlohmann::json;

constexpr std::string_view kOllamaApi = "Ollama API";

bool absent(const json& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null();
}

namespace {

// Ids for an assistant's tool calls, and the calls a tool message answers.
struct PendingCall {
  std::string id;
  std::string name;
};

// The media type of base64 image data, from its first bytes.
std::string image_media_type(const std::string& b64) {
  if (b64.rfind("/9j/", 0) == 0) {
    return "image/jpeg";
  }
  if (b64.rfind("R0lGOD", 0) == 0) {
    return "image/gif";
  }
  if (b64.rfind("UklGR", 0) == 0) {
    return "image/webp";
  }
  return "image/png";
}

}  // namespace

Result<json> with_images(const std::string& text, const json& images, const std::string& where) {
  if (!images.is_array()) {
    return bad_field("'" + where + "' must be an array of base64 strings", where);
  }
  json parts = json::array();
  if (!text.empty()) {
    parts.push_back({{"type", "text"}, {"text", text}});
  }
  for (std::size_t i = 0; i < images.size(); ++i) {
    if (!images[i].is_string() || images[i].get_ref<const std::string&>().empty()) {
      return bad_field("'" + indexed(where, i) + "' must be base64 image data", indexed(where, i));
    }
    const std::string& data = images[i].get_ref<const std::string&>();
    parts.push_back(
        {{"type", "image_url"},
         {"image_url", {{"url", "data:" + image_media_type(data) + ";base64," + data}}}});
  }
  return parts;
}

namespace {

Result<json> assistant_calls(const json& calls, const std::string& where, std::size_t message,
                             std::vector<PendingCall>& pending) {
  if (!calls.is_array()) {
    return bad_field("'" + where + "' must be an array", where);
  }
  json out = json::array();
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const std::string cw = indexed(where, k);
    const json& call = calls[k];
    auto function = call.is_object() ? call.find("function") : call.end();
    if (!call.is_object() || function == call.end() || !function->is_object() ||
        !function->contains("name") || !(*function)["name"].is_string()) {
      return bad_field("'" + cw + "' must be {\"function\":{\"name\",\"arguments\"}}", cw);
    }
    std::string id = call.contains("id") && call["id"].is_string()
                         ? call["id"].get<std::string>()
                         : "call_" + std::to_string(message) + "_" + std::to_string(k);
    json args = function->value("arguments", json::object());
    std::string arguments = args.is_string() ? args.get<std::string>() : args.dump();
    const std::string name = (*function)["name"].get<std::string>();
    out.push_back({{"id", id},
                   {"type", "function"},
                   {"function", {{"name", name}, {"arguments", arguments}}}});
    pending.push_back({id, name});
  }
  return out;
}

}  // namespace

Result<json> chat_messages(const json& messages, bool& has_images) {
  json out = json::array();
  std::vector<PendingCall> pending;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const std::string where = indexed("messages", i);
    const json& m = messages[i];
    if (!m.is_object()) {
      return bad_field("'" + where + "' must be an object", where);
    }
    if (auto e = unknown_key(
            m, {"role", "content", "images", "tool_calls", "tool_name", "tool_call_id", "thinking"},
            where, kOllamaApi)) {
      return *e;
    }
    auto role_it = m.find("role");
    const std::string role =
        role_it != m.end() && role_it->is_string() ? role_it->get<std::string>() : "";
    if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
      return bad_field("'" + where + ".role' must be system, user, assistant or tool",
                       where + ".role");
    }
    auto content_it = m.find("content");
    if (content_it != m.end() && !content_it->is_null() && !content_it->is_string()) {
      return bad_field("'" + where + ".content' must be a string", where + ".content");
    }
    const std::string content =
        content_it != m.end() && content_it->is_string() ? content_it->get<std::string>() : "";
    json message = {{"role", role}, {"content", content}};
    if (!absent(m, "images")) {
      if (role != "user") {
        return bad_field("'" + where + ".images' belong to user messages", where + ".images");
      }
      auto parts = with_images(content, m["images"], where + ".images");
      if (!parts.ok()) {
        return std::move(parts).error();
      }
      message["content"] = std::move(parts).value();
      has_images = has_images || !m["images"].empty();
    }
    if (!absent(m, "tool_calls")) {
      if (role != "assistant") {
        return bad_field("'" + where + ".tool_calls' belong to assistant messages",
                         where + ".tool_calls");
      }
      auto calls = assistant_calls(m["tool_calls"], where + ".tool_calls", i, pending);
      if (!calls.ok()) {
        return std::move(calls).error();
      }
      if (!calls->empty()) {
        message["tool_calls"] = std::move(calls).value();
        if (content.empty()) {
          message["content"] = nullptr;
        }
      }
    }
    if (!absent(m, "thinking")) {
      if (role != "assistant" || !m["thinking"].is_string()) {
        return bad_field("'" + where + ".thinking' must be a string on an assistant message",
                         where + ".thinking");
      }
      message["reasoning_content"] = m["thinking"];
    }
    if (role == "tool") {
      std::string id;
      if (!absent(m, "tool_call_id") && m["tool_call_id"].is_string()) {
        id = m["tool_call_id"].get<std::string>();
      }
      const std::string name = !absent(m, "tool_name") && m["tool_name"].is_string()
                                   ? m["tool_name"].get<std::string>()
                                   : "";
      auto match = std::find_if(pending.begin(), pending.end(), [&](const PendingCall& c) {
        return id.empty() ? name.empty() || c.name == name : c.id == id;
      });
      if (match != pending.end()) {
        id = match->id;
        pending.erase(match);
      } else if (id.empty()) {
        id = "call_" + std::to_string(i);
      }
      message["tool_call_id"] = id;
    } else if (!absent(m, "tool_name") || !absent(m, "tool_call_id")) {
      return bad_field("'" + where + "': tool_name and tool_call_id belong to tool messages",
                       where);
    }
    out.push_back(std::move(message));
  }
  return out;
}

}  // namespace lemon::api::ollama
