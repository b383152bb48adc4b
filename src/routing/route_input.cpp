#include "lemon/routing/route_input.h"

namespace lemon::routing {
namespace {

using nlohmann::json;

bool is_text_part(const json& part) {
  if (!part.is_object()) {
    return false;
  }
  auto type = part.find("type");
  return type != part.end() && type->is_string() && (*type == "text" || *type == "input_text") &&
         part.contains("text") && part["text"].is_string();
}

bool is_image_part(const json& part) {
  if (!part.is_object()) {
    return false;
  }
  auto type = part.find("type");
  return type != part.end() && type->is_string() &&
         (*type == "image_url" || *type == "input_image");
}

// A content's text: a string as is, an array's text parts joined by "\n".
std::string content_text(const json& content) {
  if (content.is_string()) {
    return content.get<std::string>();
  }
  std::string out;
  if (!content.is_array()) {
    return out;
  }
  bool first = true;
  for (const auto& part : content) {
    if (is_text_part(part)) {
      if (!first) {
        out += '\n';
      }
      out += part["text"].get_ref<const std::string&>();
      first = false;
    }
  }
  return out;
}

bool has_role(const json& item, std::string_view role) {
  if (!item.is_object()) {
    return false;
  }
  auto it = item.find("role");
  return it != item.end() && it->is_string() && it->get_ref<const std::string&>() == role;
}

bool content_has_image(const json& item) {
  const json* content = &item;
  if (item.is_object()) {
    if (auto it = item.find("content"); it != item.end()) {
      content = &*it;
    }
  }
  if (content->is_array()) {
    for (const auto& part : *content) {
      if (is_image_part(part)) {
        return true;
      }
    }
  }
  return is_image_part(*content);
}

bool any_image(const json& items) {
  if (!items.is_array()) {
    return false;
  }
  for (const auto& item : items) {
    if (content_has_image(item)) {
      return true;
    }
  }
  return false;
}

// The last item with role "user" and a content, as text; nullopt if none.
std::optional<std::string> last_user_text(const json& items) {
  for (auto it = items.rbegin(); it != items.rend(); ++it) {
    if (has_role(*it, "user") && it->contains("content")) {
      return content_text((*it)["content"]);
    }
  }
  return std::nullopt;
}

std::string joined_strings(const json& items) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (item.is_string()) {
      if (!first) {
        out += '\n';
      }
      out += item.get_ref<const std::string&>();
      first = false;
    }
  }
  return out;
}

// A Responses `input` array without a user item: its plain strings and the
// text of its role-less items, in order.
std::string loose_input_text(const json& items) {
  std::string out;
  bool first = true;
  auto add = [&](const std::string& text) {
    if (!first) {
      out += '\n';
    }
    out += text;
    first = false;
  };
  for (const auto& item : items) {
    if (item.is_string()) {
      add(item.get<std::string>());
    } else if (item.is_object() && !item.contains("role")) {
      if (auto content = item.find("content"); content != item.end()) {
        add(content_text(*content));
      } else if (is_text_part(item)) {
        add(item["text"].get<std::string>());
      }
    }
  }
  return out;
}

// The text of the first item with `role`, or "".
std::string first_text(const json& items, std::string_view role) {
  if (!items.is_array()) {
    return {};
  }
  for (const auto& item : items) {
    if (has_role(item, role) && item.contains("content")) {
      return content_text(item["content"]);
    }
  }
  return {};
}

}  // namespace

RouteInput route_input_from_body(const nlohmann::json& body) {
  RouteInput input;
  if (!body.is_object()) {
    return input;
  }
  if (auto tools = body.find("tools"); tools != body.end()) {
    input.has_tools = tools->is_array() && !tools->empty();
  }
  if (auto metadata = body.find("metadata"); metadata != body.end() && metadata->is_object()) {
    for (const auto& item : metadata->items()) {
      if (item.value().is_string()) {
        input.metadata[item.key()] = item.value().get<std::string>();
      }
    }
  }
  if (auto messages = body.find("messages"); messages != body.end() && messages->is_array()) {
    input.text = last_user_text(*messages).value_or(std::string());
    input.has_images = any_image(*messages);
  } else if (auto prompt = body.find("prompt"); prompt != body.end()) {
    input.text = prompt->is_array() ? joined_strings(*prompt) : content_text(*prompt);
  } else if (auto in = body.find("input"); in != body.end()) {
    if (in->is_string()) {
      input.text = in->get<std::string>();
    } else if (in->is_array()) {
      auto user = last_user_text(*in);
      input.text = user ? *user : loose_input_text(*in);
      input.has_images = any_image(*in);
    }
  }
  return input;
}

Result<bool> route_trace_requested(const nlohmann::json& body) {
  auto it = body.find("route_trace");
  if (it == body.end() || it->is_null()) {
    return false;
  }
  if (!it->is_boolean()) {
    return Error(ErrorCode::kInvalidRequest, "'route_trace' must be a boolean", "route_trace");
  }
  return it->get<bool>();
}

std::uint64_t conversation_fingerprint(const nlohmann::json& body) {
  std::string key;
  const json* items = nullptr;
  if (auto m = body.find("messages"); m != body.end() && m->is_array()) {
    items = &*m;
  } else if (auto in = body.find("input"); in != body.end() && in->is_array()) {
    items = &*in;
  }
  if (items != nullptr) {
    key = first_text(*items, "system") + '\x1f' + first_text(*items, "user");
  } else if (auto p = body.find("prompt"); p != body.end()) {
    key = std::string(1, '\x1f') + (p->is_array() ? joined_strings(*p) : content_text(*p));
  } else if (auto in = body.find("input"); in != body.end() && in->is_string()) {
    key = std::string(1, '\x1f') + in->get<std::string>();
  }
  std::uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : key) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace lemon::routing
