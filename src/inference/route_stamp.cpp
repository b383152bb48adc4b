#include "lemon/inference/route_stamp.h"

#include "lemon/inference/sse_event_boundary.h"

namespace lemon::inference {

std::optional<std::string> stamp_answer(std::string_view body, std::string_view member) {
  // The member goes first in the object, written into the text as it is:
  // the answer is neither parsed nor written again.
  const std::size_t open = body.find_first_not_of(" \t\r\n");
  const std::size_t close = body.find_last_not_of(" \t\r\n");
  if (open == std::string_view::npos || body[open] != '{' || body[close] != '}' || close == open) {
    return std::nullopt;
  }
  const bool empty = body.find_first_not_of(" \t\r\n", open + 1) == close;
  std::string out;
  out.reserve(body.size() + member.size() + 24);
  out.append(body.substr(0, open + 1));
  out.append("\"x_lemonade_route\":");
  out.append(member);
  if (!empty) {
    out.push_back(',');
  }
  out.append(body.substr(open + 1));
  return out;
}

RouteStampWriter::RouteStampWriter(net::ResponseWriter& inner, std::string route,
                                   const nlohmann::json& decision)
    : inner_(inner),
      route_(std::move(route)),
      decision_(decision.is_null()
                    ? std::string()
                    : decision.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) {}

net::Headers RouteStampWriter::stamped(const net::Headers& headers) const {
  net::Headers out = headers;
  out.set(kRouteHeader, route_);
  return out;
}

bool RouteStampWriter::send(int status, const net::Headers& headers, std::string_view body) {
  if (status < 200 || status >= 300) {
    return inner_.send(status, headers, body);
  }
  if (!decision_.empty()) {
    if (auto stamped_body = stamp_answer(body, decision_)) {
      return inner_.send(status, stamped(headers), *stamped_body);
    }
  }
  return inner_.send(status, stamped(headers), body);
}

bool RouteStampWriter::begin_chunked(int status, const net::Headers& headers) {
  if (status < 200 || status >= 300) {
    return inner_.begin_chunked(status, headers);
  }
  stamping_ = !decision_.empty();
  return inner_.begin_chunked(status, stamped(headers));
}

namespace {

// Where the value of an event's one "data:" line starts and ends; nullopt
// when it has none or several.
std::optional<std::pair<std::size_t, std::size_t>> data_value(std::string_view event) {
  std::size_t data_at = std::string_view::npos;
  for (std::size_t at = 0; at < event.size();) {
    const std::size_t end = event.find('\n', at);
    const std::string_view line =
        event.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    if (line.starts_with("data:")) {
      if (data_at != std::string_view::npos) {
        return std::nullopt;  // several data lines: left alone
      }
      data_at = at;
    }
    if (end == std::string_view::npos) {
      break;
    }
    at = end + 1;
  }
  if (data_at == std::string_view::npos) {
    return std::nullopt;
  }
  std::size_t value_end = std::min(event.find('\n', data_at), event.size());
  if (value_end > data_at && event[value_end - 1] == '\r') {
    --value_end;
  }
  std::size_t value_at = data_at + 5;
  if (value_at < value_end && event[value_at] == ' ') {
    ++value_at;
  }
  return std::make_pair(value_at, value_end);
}

}  // namespace

RouteStampWriter::EventStamp RouteStampWriter::stamp_event(std::string_view event) const {
  auto range = data_value(event);
  if (!range) {
    return {};
  }
  const std::string_view value = event.substr(range->first, range->second - range->first);
  if (!value.starts_with('{')) {
    return {};
  }
  // The first object decides: an error (the load failed after the
  // keepalives) is passed on as it is, and ends the stamping.
  const auto parsed = nlohmann::json::parse(value, nullptr, false);
  if (!parsed.is_object()) {
    return {};
  }
  EventStamp stamp;
  stamp.decided = true;
  if (parsed.contains("error")) {
    return stamp;
  }
  if (auto stamped_value = stamp_answer(value, decision_)) {
    std::string out(event.substr(0, range->first));
    out += *stamped_value;
    out += event.substr(range->second);
    stamp.event = std::move(out);
  }
  return stamp;
}

bool RouteStampWriter::write_chunk(std::string_view data) {
  if (!stamping_) {
    return inner_.write_chunk(data);
  }
  pending_.append(data);
  std::string out;
  std::size_t from = 0;
  while (stamping_) {
    const std::size_t end = next_sse_event_end(pending_, from);
    if (end == std::string::npos) {
      break;
    }
    const std::string_view event = std::string_view(pending_).substr(from, end - from);
    EventStamp stamp = stamp_event(event);
    out += stamp.event ? std::string_view(*stamp.event) : event;
    stamping_ = !stamp.decided;
    from = end;
  }
  if (!stamping_) {
    out.append(pending_, from, std::string::npos);
    pending_.clear();
  } else {
    pending_.erase(0, from);
  }
  return out.empty() || inner_.write_chunk(out);
}

bool RouteStampWriter::finish() {
  if (!pending_.empty()) {
    inner_.write_chunk(pending_);
    pending_.clear();
  }
  stamping_ = false;
  return inner_.finish();
}

}  // namespace lemon::inference
