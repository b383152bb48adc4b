// A WebSocket route as an API room sees it (ApiRoutes::websocket): JSON
// messages with a "type", in both directions, Lemonade's and OpenAI's
// realtime convention. The HTTP layer does everything around them:
// - the handshake (RFC 6455, net/websocket.h), the route's Origin and Host
//   rules (access_policy.h) and the subprotocol: `lemonade-realtime` or
//   OpenAI's `realtime` is echoed when offered, never a credential;
// - the API key: `Authorization: Bearer`, `?api_key=`, a
//   `bearer.<base64url(key)>` (or OpenAI's `openai-insecure-api-key.<key>`)
//   subprotocol, or in-band: a socket opened without a key (when keys are
//   configured) takes only {"type":"auth","token":...} answered with
//   {"type":"auth.ok"}, must send it within kAuthTimeout, and sends small
//   messages until then (kUnauthenticatedMessageBytes);
// - the key's scope (the route's), and its limits when the socket opens;
// - each text message parsed: one that is not a JSON object with a string
//   "type" is answered with an error event, {"type":"error","error":
//   {"message","type"}}, and the socket stays open.
//
// Ownership: the server owns its sockets; a room's handler may keep the
// JsonSocket it is given, also on threads of its own (sending to a closed
// socket is refused, harmlessly). Thread-safety: a JsonSocket may be used
// from any thread; a handler's methods run on the server's WebSocket thread,
// one at a time, and must not block.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/http/api_keys.h"
#include "lemon/net/message.h"

namespace lemon::http {

inline constexpr std::chrono::seconds kAuthTimeout{10};
inline constexpr std::size_t kUnauthenticatedMessageBytes = 4096;
// In-band auth messages with a wrong key a socket may send before it is
// closed (1008).
inline constexpr int kMaxFailedAuths = 3;

class JsonSocket {
 public:
  virtual ~JsonSocket() = default;
  // Queues `event` as one text message (invalid UTF-8 in its strings is
  // replaced). False when the socket is closed or its queue is full: the
  // client reads too slowly (the room decides what that means).
  virtual bool send(const nlohmann::json& event) = 0;
  // {"type":"error","error":{"message":message,"type":type}}.
  virtual bool send_error(std::string_view message,
                          std::string_view type = "invalid_request_error") = 0;
  // The close handshake (net/websocket.h's codes); what is queued goes first.
  virtual void close(std::uint16_t code, std::string_view reason) = 0;
  // The same, dropping what is queued first (a client too slow to read it).
  virtual void abandon(std::uint16_t code, std::string_view reason) = 0;
  // Asks for on_wake() on the socket thread; never blocks, takes no lock a
  // logger holds.
  virtual void wake() = 0;
  virtual std::size_t queued_bytes() const = 0;
};

class JsonSocketHandler {
 public:
  virtual ~JsonSocketHandler() = default;
  // The socket is open and its caller authenticated.
  virtual void on_open(const std::shared_ptr<JsonSocket>& socket) = 0;
  // A message other than "auth": `message` is an object whose "type" is
  // `type`.
  virtual void on_message(const std::string& type, const nlohmann::json& message) = 0;
  virtual void on_wake() {}
  // The socket ended; called once, last.
  virtual void on_closed() {}
};

// Who opened a socket: the key they authenticated with (nullptr when the
// router has no keys), kept valid by `ring`.
struct SocketCaller {
  std::shared_ptr<const KeyRing> ring;
  const ApiKey* key = nullptr;
  std::string remote_addr;
};

struct SocketRoute {
  Scope scope = Scope::kRead;  // what the caller's key needs
  // The largest message an authenticated client may send.
  std::size_t max_message_bytes = 64u << 10;
  // Makes the room's handler for an upgrade `request` (its target, query
  // and headers; no body) once its caller is known: at the handshake, or
  // when an in-band auth succeeds. An Error refuses it: with that HTTP
  // status before the 101, or, after an in-band auth, as an error event
  // and a close (1008).
  std::function<Result<std::shared_ptr<JsonSocketHandler>>(const net::Request& request,
                                                           const SocketCaller& caller)>
      open;
};

// The subprotocol a server answers with: `lemonade-realtime` when offered,
// else `realtime` (OpenAI's browser clients), else "" when none was offered;
// nullopt when protocols were offered and none of them is served (the
// handshake is refused, as Lemonade does). Credentials among them are never
// chosen.
std::optional<std::string> choose_subprotocol(const net::Request& request);

}  // namespace lemon::http
