#include "lemon/inference/translating_writer.h"

#include "lemon/http/error_response.h"

namespace lemon::inference {

using http::dialect_error_body;
using http::dialect_stream_error;

using http::ApiDialect;
using http::dialect_error;
using http::DialectError;
using http::json_headers;
using http::json_text;
namespace {

using Clock = ChatAnswer::Clock;

// The message of an error body: the router's envelope, a backend's error
// (normalized or not), or the text itself.
std::string error_message(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object()) {
    if (auto e = j.find("error"); e != j.end()) {
      if (e->is_string()) {
        return e->get<std::string>();
      }
      if (e->is_object() && e->contains("message") && (*e)["message"].is_string()) {
        return (*e)["message"].get<std::string>();
      }
    }
  }
  return std::string(body);
}

// The next SSE event boundary in `text` (the end of its blank line), or npos.
std::size_t event_end(std::string_view text) {
  std::size_t lf = text.find("\n\n");
  std::size_t crlf = text.find("\r\n\r\n");
  if (crlf != std::string_view::npos && (lf == std::string_view::npos || crlf < lf)) {
    return crlf + 4;
  }
  return lf == std::string_view::npos ? lf : lf + 2;
}

}  // namespace

TranslatingWriter::TranslatingWriter(net::ResponseWriter& inner, ApiDialect dialect,
                                     ChatAnswer* answer, BodyRewrite rewrite)
    : inner_(inner), dialect_(dialect), answer_(answer), rewrite_(std::move(rewrite)) {}

void TranslatingWriter::add_answer_header(std::string name, std::string value) {
  extra_.set(std::move(name), std::move(value));
}

net::Headers TranslatingWriter::with_extra(net::Headers headers) const {
  for (const auto& [name, value] : extra_.fields()) {
    headers.set(name, value);
  }
  return headers;
}

void TranslatingWriter::fail(const Error& error) {
  DialectError e = dialect_error(dialect_, error);
  if (done_) {
    return;
  }
  if (inner_.headers_sent()) {
    on_error(e.status, error.message(), e.headers);
    return;
  }
  done_ = true;
  inner_.send(e.status, e.headers, e.body);
}

bool TranslatingWriter::on_error(int status, const std::string& message,
                                 const net::Headers& headers) {
  if (done_) {
    return false;
  }
  done_ = true;
  if (inner_.headers_sent()) {
    // A stream the client asked for has begun: its end says what happened.
    inner_.write_chunk(dialect_stream_error(dialect_, status, message));
    return inner_.finish();
  }
  net::Headers out = json_headers();
  if (auto retry = headers.get("Retry-After")) {
    out.add("Retry-After", std::string(*retry));
  }
  return inner_.send(status, out, dialect_error_body(dialect_, status, message));
}

bool TranslatingWriter::send(int status, const net::Headers& headers, std::string_view body) {
  if (done_) {
    return false;
  }
  if (status >= 400) {
    return on_error(status, error_message(body), headers);
  }
  if (answer_ == nullptr && !rewrite_) {
    done_ = true;
    return inner_.send(status, with_extra(headers), body);
  }
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object()) {
    return on_error(502, "the backend's answer is not a JSON object", {});
  }
  if (answer_ == nullptr) {
    auto rewritten = rewrite_(j);
    if (!rewritten.ok()) {
      return on_error(error_status(rewritten.error()), rewritten.error().message(), {});
    }
    done_ = true;
    return inner_.send(status, with_extra(json_headers()), json_text(*rewritten));
  }
  // A backend that answered a chat without streaming: one chunk.
  std::string text = answer_->chunk(chat_completion_as_chunk(j), Clock::now());
  if (!answer_->streaming()) {
    return send_whole();
  }
  bool ok = open_stream() && write(text) && write(answer_->close(Clock::now()));
  done_ = true;
  return inner_.finish() && ok;
}

bool TranslatingWriter::begin_chunked(int status, const net::Headers& headers) {
  if (done_) {
    return false;
  }
  if (answer_ == nullptr) {
    return inner_.begin_chunked(status, status < 400 ? with_extra(headers) : headers);
  }
  return !answer_->streaming() || open_stream();
}

bool TranslatingWriter::open_stream() {
  if (inner_.headers_sent()) {
    return true;
  }
  if (!inner_.begin_chunked(200, with_extra(net::Headers{{"Content-Type", answer_->content_type()},
                                                         {"Cache-Control", "no-cache"},
                                                         {"X-Accel-Buffering", "no"}}))) {
    return false;
  }
  return write(answer_->open());
}

bool TranslatingWriter::write(const std::string& text) {
  return text.empty() || inner_.write_chunk(text);
}

bool TranslatingWriter::write_chunk(std::string_view data) {
  if (answer_ == nullptr) {
    return inner_.write_chunk(data);
  }
  if (done_) {
    return !cut_;
  }
  pending_.append(data);
  for (std::size_t end; (end = event_end(pending_)) != std::string::npos;) {
    std::string event = pending_.substr(0, end);
    pending_.erase(0, end);
    if (!on_event(event)) {
      return false;
    }
    if (done_) {
      return !cut_;
    }
  }
  return true;
}

bool TranslatingWriter::on_event(std::string_view event) {
  std::string data;
  bool has_data = false;
  bool comment = false;
  std::size_t start = 0;
  while (start < event.size()) {
    std::size_t nl = event.find('\n', start);
    std::string_view line =
        event.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    start = nl == std::string_view::npos ? event.size() : nl + 1;
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.rfind("data:", 0) == 0) {
      line.remove_prefix(5);
      if (!line.empty() && line.front() == ' ') {
        line.remove_prefix(1);
      }
      data += (has_data ? "\n" : "") + std::string(line);
      has_data = true;
    } else if (!line.empty() && line.front() == ':') {
      comment = true;
    }
  }
  if (!has_data) {
    if (comment && answer_->streaming()) {
      return open_stream() && write(answer_->keepalive());  // ": loading"
    }
    return true;
  }
  if (data == "[DONE]") {
    return true;
  }
  auto j = nlohmann::json::parse(data, nullptr, false);
  if (!j.is_object()) {
    return true;  // not a chunk (nothing the client's API has room for)
  }
  if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
    int status = 500;
    if (e->is_object() && e->contains("code") && (*e)["code"].is_number_integer()) {
      status = (*e)["code"].get<int>();
    }
    if (status < 400 || status > 599) {
      status = 500;
    }
    on_error(status, error_message(data), {});
    return true;
  }
  std::string text = answer_->chunk(j, Clock::now());
  bool ok = true;
  if (answer_->streaming()) {
    ok = open_stream() && write(text);
  }
  if (answer_->complete()) {
    cut_ = true;
    if (answer_->streaming()) {
      write(answer_->close(Clock::now()));
      done_ = true;
      inner_.finish();
    } else {
      send_whole();
    }
    return false;
  }
  return ok;
}

bool TranslatingWriter::send_whole() {
  auto whole = answer_->whole(Clock::now());
  if (!whole.ok()) {
    return on_error(error_status(whole.error()), whole.error().message(), {});
  }
  done_ = true;
  return inner_.send(200, with_extra(json_headers()), json_text(*whole));
}

bool TranslatingWriter::finish() {
  if (answer_ == nullptr) {
    return inner_.finish();
  }
  if (done_) {
    return !cut_;
  }
  if (!answer_->streaming()) {
    return send_whole();
  }
  bool ok = open_stream() && write(answer_->close(Clock::now()));
  done_ = true;
  return inner_.finish() && ok;
}

bool TranslatingWriter::headers_sent() const {
  if (answer_ != nullptr && !answer_->streaming()) {
    return done_;
  }
  return inner_.headers_sent();
}

}  // namespace lemon::inference
