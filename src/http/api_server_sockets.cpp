// ApiServer's WebSocket routes (json_socket.h): the HeadCheck's part for an
// upgrade, the upgrade itself behind the SocketGate, their registration, and
// what --websocket-port's listener answers a request that is not an upgrade.
#include "lemon/http/api_server.h"

#include "api_server_detail.h"
#include "lemon/http/caller.h"
#include "lemon/http/error_response.h"
#include "socket_gate.h"

namespace lemon::http {

net::EarlyAnswer websocket_port_refusal(const net::Request& r) {
  net::EarlyAnswer answer;
  const Error e(ErrorCode::kUpgradeRequired,
                "this port serves WebSocket upgrades only (/realtime, /logs/stream); " + r.method +
                    " " + r.path + " is served on the main port");
  answer.status = error_shape(e.code()).status;
  answer.headers = error_headers(e);
  answer.headers.add("Upgrade", "websocket");
  answer.body = error_envelope(e);
  return answer;
}

std::optional<Error> ApiServer::check_socket_head(const net::Request& r, Scope scope,
                                                  const AccessSettings& settings,
                                                  const KeyRing* ring, const ApiKey*& key,
                                                  bool& pending) {
  auto handshake = net::check_websocket_handshake(r);
  if (!handshake.ok()) {
    return handshake.error();
  }
  if (!choose_subprotocol(r)) {
    return Error(ErrorCode::kInvalidRequest,
                 "WebSocket handshake: none of the offered subprotocols is served "
                 "(lemonade-realtime, realtime)");
  }
  pending = ring != nullptr && !ring->empty() && !socket_key(r);
  if (pending) {
    // No key at all: Host and Origin are judged now, the key in-band.
    return check_access(r, settings, RouteAccess::kPublic);
  }
  return check_access(r, settings, RouteAccess::kRead, KeyHeaders::kWebSocket, ring, scope, &key);
}

void ApiServer::open_socket(const std::shared_ptr<const SocketRoute>& route, net::Request& r,
                            net::ResponseWriter& w) {
  const auto* caller = dynamic_cast<const Caller*>(r.context.get());
  auto accept = net::check_websocket_handshake(r);
  auto protocol = choose_subprotocol(r);
  if (caller == nullptr || !accept.ok() || !protocol) {
    // Only a request the HeadCheck judged is upgraded.
    write_error(w, accept.ok() ? Error(ErrorCode::kInvalidRequest, "not a WebSocket handshake")
                               : accept.error());
    return;
  }
  SocketGateSetup setup;
  setup.route = route;
  setup.caller = SocketCaller{caller->ring, caller->key, r.remote_addr};
  setup.keys = [this] { return keys(); };
  if (caller->pending_auth) {
    setup.request = r;
  } else {
    auto room = route->open(r, setup.caller);
    if (wrote_error(w, room)) {
      return;
    }
    setup.room = std::move(*room);
  }
  const bool pending = caller->pending_auth;
  net::Headers headers;
  if (!protocol->empty()) {
    headers.add("Sec-WebSocket-Protocol", *protocol);
  }
  if (!w.upgrade_to_websocket(*accept, headers, make_socket_gate(std::move(setup)),
                              pending ? kUnauthenticatedMessageBytes : route->max_message_bytes) &&
      !w.headers_sent()) {
    write_error(w, Error(ErrorCode::kServerBusy,
                         "server is busy: too many WebSockets are open (or the server stops)")
                       .with_retry_after(1));
  }
}

void ApiServer::websocket(const std::string& suffix, SocketRoute route) {
  registered_.emplace_back("WEBSOCKET " + RouteTable::api_prefixes().front() + suffix, route.scope);
  const int tag = route_tag(RouteAccess::kRead, ApiDialect::kLemonade, route.scope);
  auto shared = std::make_shared<const SocketRoute>(std::move(route));
  const RouteTable::RouteHandler handler = [this, shared](net::Request& r, net::ResponseWriter& w,
                                                          std::string_view) {
    open_socket(shared, r, w);
  };
  routes_.add_websocket(suffix, true, handler, tag);
  routes_.add_websocket("/" + suffix, false, handler, tag);
}

}  // namespace lemon::http
