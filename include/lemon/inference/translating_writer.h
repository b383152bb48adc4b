// TranslatingWriter: the ResponseWriter between the forward path
// (InferenceGateway::forward) and the client on the Anthropic and Ollama
// routes. The forward path writes OpenAI and router
// shapes; this writes the client's API instead:
// - errors (a status >= 400, or an error event once a stream began) in the
//   dialect's shape (api_dialect.h), with their status and Retry-After;
// - with a ChatAnswer: the backend's SSE chunks, each translated and written
//   as it arrives (": loading" becomes the dialect's keepalive); a stream
//   the client did not ask for is collected into one body; when the answer
//   completes early (a stop sequence) its end is written and write_chunk()
//   returns false, so the forward path closes the backend's request just as
//   when a client leaves;
// - with a BodyRewrite: a successful JSON answer rewritten (embeddings,
//   tokenize).
// client_connected(), client_fd() and the half-close probe are the
// client's, so a client that leaves cancels the backend as on the OpenAI
// routes. Internal to src/http.
//
// Thread-safety: one request's, on its connection thread.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/http/api_dialect.h"
#include "lemon/inference/chat_answer.h"
#include "lemon/net/server.h"

namespace lemon::inference {

using http::ApiDialect;

class TranslatingWriter final : public net::ResponseWriter {
 public:
  using BodyRewrite = std::function<Result<nlohmann::json>(const nlohmann::json& backend)>;

  // `answer` (may be null) must outlive the writer.
  TranslatingWriter(net::ResponseWriter& inner, ApiDialect dialect, ChatAnswer* answer = nullptr,
                    BodyRewrite rewrite = {});
  TranslatingWriter(const TranslatingWriter&) = delete;
  TranslatingWriter& operator=(const TranslatingWriter&) = delete;

  bool send(int status, const net::Headers& headers, std::string_view body) override;
  bool begin_chunked(int status, const net::Headers& headers) override;
  bool write_chunk(std::string_view data) override;
  bool finish() override;
  bool headers_sent() const override;
  bool client_connected() override { return inner_.client_connected(); }
  bool keep_serving_half_closed() override { return inner_.keep_serving_half_closed(); }
  int client_fd() const override { return inner_.client_fd(); }

  // Answers `error` in the dialect (a handler's own checks).
  void fail(const Error& error);
  // A header every successful answer carries (a routing policy's
  // x-lemonade-route).
  void add_answer_header(std::string name, std::string value);

 private:
  bool open_stream();
  bool write(const std::string& text);
  bool on_event(std::string_view event);
  bool on_error(int status, const std::string& message, const net::Headers& headers);
  bool send_whole();
  net::Headers with_extra(net::Headers headers) const;

  net::ResponseWriter& inner_;
  const ApiDialect dialect_;
  ChatAnswer* const answer_;
  const BodyRewrite rewrite_;
  net::Headers extra_;   // add_answer_header's
  std::string pending_;  // the start of an SSE event not yet complete
  bool done_ = false;    // the client's answer is complete
  bool cut_ = false;     // it completed before the backend's end (cancel it)
};

}  // namespace lemon::inference
