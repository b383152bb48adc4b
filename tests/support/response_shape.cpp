#include "support/response_shape.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace lemon::testing {
namespace {

constexpr std::array<std::string_view, 9> kLiteralKeys = {
    "code", "type", "param", "object", "status", "role", "finish_reason", "stop_reason", "done"};

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(),
                                      [](unsigned char c) { return std::isdigit(c) != 0; });
}

// Replaces every "host:<digits>" of the loopback addresses with "host:<port>".
std::string mask_ports(std::string text) {
  for (std::string_view host : {"127.0.0.1:", "localhost:", "[::1]:"}) {
    std::size_t at = 0;
    while ((at = text.find(host, at)) != std::string::npos) {
      std::size_t digits = at + host.size();
      std::size_t end = digits;
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])) != 0) {
        ++end;
      }
      if (end > digits) {
        text.replace(digits, end - digits, "<port>");
      }
      at = digits;
    }
  }
  return text;
}

// Appends `shape` unless it equals the last one: a run of equal events is
// recorded once, so how many tokens a fake sends does not matter.
void append_collapsed(nlohmann::json& list, nlohmann::json shape) {
  if (list.empty() || list.back() != shape) {
    list.push_back(std::move(shape));
  }
}

std::string_view trim_cr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  return line;
}

template <typename Fn>
void for_each_line(std::string_view body, Fn&& fn) {
  while (!body.empty()) {
    const std::size_t nl = body.find('\n');
    fn(trim_cr(body.substr(0, nl)));
    if (nl == std::string_view::npos) {
      break;
    }
    body.remove_prefix(nl + 1);
  }
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// An SSE line's value: what follows the colon, less one leading space.
std::string_view field_value(std::string_view line) {
  std::string_view value = line.substr(line.find(':') + 1);
  if (!value.empty() && value.front() == ' ') {
    value.remove_prefix(1);
  }
  return value;
}

}  // namespace

std::string ShapeMasks::apply(std::string text) const {
  for (const auto& [literal, placeholder] : literals) {
    if (literal.empty()) {
      continue;
    }
    for (std::size_t at = 0; (at = text.find(literal, at)) != std::string::npos;) {
      text.replace(at, literal.size(), placeholder);
      at += placeholder.size();
    }
  }
  return mask_ports(std::move(text));
}

bool is_literal_key(std::string_view key) {
  return std::find(kLiteralKeys.begin(), kLiteralKeys.end(), key) != kLiteralKeys.end();
}

nlohmann::json json_shape(const nlohmann::json& value, const ShapeMasks& masks,
                          std::string_view key) {
  switch (value.type()) {
    case nlohmann::json::value_t::object: {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& [k, v] : value.items()) {
        std::string name = all_digits(k) ? "<number>" : masks.apply(k);
        if (out.contains(name)) {
          continue;
        }
        const bool machine = std::find(masks.machine_keys.begin(), masks.machine_keys.end(), k) !=
                             masks.machine_keys.end();
        out[name] = machine ? nlohmann::json("<machine>") : json_shape(v, masks, k);
      }
      return out;
    }
    case nlohmann::json::value_t::array: {
      nlohmann::json out = nlohmann::json::array();
      if (!value.empty()) {
        out.push_back(json_shape(value.front(), masks, key));
      }
      return out;
    }
    case nlohmann::json::value_t::string:
      return is_literal_key(key) ? masks.apply(value.get<std::string>()) : "string";
    case nlohmann::json::value_t::boolean:
      return is_literal_key(key) ? value : nlohmann::json("boolean");
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::discarded:
      return "<invalid>";
    default:
      return "number";
  }
}

nlohmann::json sse_event_shape(std::string_view event, std::string_view data,
                               const ShapeMasks& masks) {
  nlohmann::json out = nlohmann::json::object();
  if (!event.empty()) {
    out["event"] = std::string(event);
  }
  if (data == "[DONE]") {
    out["data"] = "[DONE]";
  } else if (!data.empty()) {
    auto parsed = nlohmann::json::parse(data, nullptr, false);
    out["data"] = parsed.is_discarded() ? nlohmann::json("<text>") : json_shape(parsed, masks);
  }
  return out;
}

nlohmann::json sse_shape(std::string_view body, const ShapeMasks& masks) {
  nlohmann::json events = nlohmann::json::array();
  std::string event;
  std::string data;
  bool has_data = false;
  auto flush = [&] {
    if (has_data || !event.empty()) {
      append_collapsed(events, sse_event_shape(event, data, masks));
    }
    event.clear();
    data.clear();
    has_data = false;
  };
  for_each_line(body, [&](std::string_view line) {
    if (line.empty()) {
      flush();
    } else if (starts_with(line, "event:")) {
      event = std::string(field_value(line));
    } else if (starts_with(line, "data:")) {
      const std::string_view value = field_value(line);
      if (has_data) {
        data += '\n';
      }
      data += value;
      has_data = true;
    }
    // Comments (": ping"), id: and retry: lines say nothing about shapes.
  });
  flush();
  return events;
}

nlohmann::json ndjson_shape(std::string_view body, const ShapeMasks& masks) {
  nlohmann::json lines = nlohmann::json::array();
  for_each_line(body, [&](std::string_view line) {
    if (line.empty()) {
      return;
    }
    auto parsed = nlohmann::json::parse(line, nullptr, false);
    append_collapsed(lines,
                     parsed.is_discarded() ? nlohmann::json("<text>") : json_shape(parsed, masks));
  });
  return lines;
}

nlohmann::json prometheus_shape(std::string_view body) {
  std::vector<std::string> families;
  for_each_line(body, [&](std::string_view line) {
    if (starts_with(line, "# TYPE ")) {
      families.emplace_back(line.substr(7));
    }
  });
  std::sort(families.begin(), families.end());
  return families;
}

nlohmann::json body_shape(std::string_view content_type, std::string_view body,
                          const ShapeMasks& masks) {
  const std::string_view media = content_type.substr(0, content_type.find(';'));
  if (media == "text/event-stream") {
    return sse_shape(body, masks);
  }
  if (media == "application/x-ndjson") {
    return ndjson_shape(body, masks);
  }
  if (body.empty()) {
    return "<empty>";
  }
  if (media == "application/json") {
    auto parsed = nlohmann::json::parse(body, nullptr, false);
    return parsed.is_discarded() ? nlohmann::json("<invalid json>") : json_shape(parsed, masks);
  }
  if (media == "text/plain" && body.find("# TYPE ") != std::string_view::npos) {
    return prometheus_shape(body);
  }
  return starts_with(media, "text/") ? "<text>" : "<binary>";
}

}  // namespace lemon::testing
