// RouteStampWriter: how a request that a routing policy routed shows its
// decision (Lemonade 11): every successful answer carries the header
// `x-lemonade-route: <rule id or "default">`, set before a stream begins
// (the ": loading" keepalives included); a whole JSON answer gets the key
// `x_lemonade_route` (the decision object), and a stream gets it in its
// first event whose data is a JSON object, unless that object is an error.
// Error answers pass unchanged.
// Used on the OpenAI routes; the translating rooms (Anthropic, Ollama) get
// the header alone (TranslatingWriter::add_answer_header).
//
// Thread-safety: one request's, on its connection thread.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "lemon/net/server.h"

namespace lemon::inference {

inline constexpr const char* kRouteHeader = "x-lemonade-route";

class RouteStampWriter final : public net::ResponseWriter {
 public:
  // `route` is the header's value, `decision` the object's (null: no body
  // stamp). `inner` outlives the writer.
  RouteStampWriter(net::ResponseWriter& inner, std::string route, const nlohmann::json& decision);
  RouteStampWriter(const RouteStampWriter&) = delete;
  RouteStampWriter& operator=(const RouteStampWriter&) = delete;

  bool send(int status, const net::Headers& headers, std::string_view body) override;
  bool begin_chunked(int status, const net::Headers& headers) override;
  bool write_chunk(std::string_view data) override;
  bool finish() override;
  bool headers_sent() const override { return inner_.headers_sent(); }
  bool client_connected() override { return inner_.client_connected(); }
  bool keep_serving_half_closed() override { return inner_.keep_serving_half_closed(); }
  int client_fd() const override { return inner_.client_fd(); }

 private:
  net::Headers stamped(const net::Headers& headers) const;
  // What the stream's first JSON object event becomes: `decided` once an
  // event's data is a JSON object (stamping ends there), with `event` the
  // stamped event, or nullopt for an error object, passed on as it is.
  struct EventStamp {
    bool decided = false;
    std::optional<std::string> event;
  };
  EventStamp stamp_event(std::string_view event) const;

  net::ResponseWriter& inner_;
  const std::string route_;
  const std::string decision_;  // the decision object as JSON text; "" for none
  bool stamping_ = false;       // a stream whose first JSON event is still to come
  std::string pending_;         // the start of an event not yet complete
};

// `body` (a whole JSON answer) with the member "x_lemonade_route": `member`
// (JSON text) first in its object, or nullopt when it is not an object.
std::optional<std::string> stamp_answer(std::string_view body, std::string_view member);

}  // namespace lemon::inference
