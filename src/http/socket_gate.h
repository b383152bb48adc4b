// SocketGate: the net::WebSocketHandler behind every JSON WebSocket route
// (json_socket.h). It parses each text message, answers in-band `auth`, keeps
// an unauthenticated socket to `auth` alone, and hands the rest to the room's
// JsonSocketHandler, which it makes once the caller is known.
//
// Internal to src/http. Thread-safety: a net::WebSocketHandler (its methods
// run on the server's WebSocket thread).
#pragma once

#include <functional>
#include <memory>

#include "lemon/http/json_socket.h"
#include "lemon/net/websocket.h"

namespace lemon::http {

struct SocketGateSetup {
  std::shared_ptr<const SocketRoute> route;
  // The upgrade request, kept (without its context) for a caller that
  // authenticates in-band.
  net::Request request;
  SocketCaller caller;
  // The room's handler, made at the handshake; null when the caller must
  // still authenticate.
  std::shared_ptr<JsonSocketHandler> room;
  // The keys in force now (in-band auth reads them when it runs).
  std::function<std::shared_ptr<const KeyRing>()> keys;
};

std::shared_ptr<net::WebSocketHandler> make_socket_gate(SocketGateSetup setup);

}  // namespace lemon::http
