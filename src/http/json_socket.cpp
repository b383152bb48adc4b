#include "lemon/http/json_socket.h"

#include <utility>

#include "lemon/core/log.h"
#include "lemon/http/error_response.h"
#include "socket_gate.h"

namespace lemon::http {
namespace {

constexpr std::string_view kLemonadeProtocol = "lemonade-realtime";
constexpr std::string_view kOpenAiProtocol = "realtime";

// The JsonSocket a room is given: JSON over the net::WebSocket.
class JsonOverWebSocket final : public JsonSocket {
 public:
  explicit JsonOverWebSocket(std::shared_ptr<net::WebSocket> socket) : socket_(std::move(socket)) {}

  bool send(const nlohmann::json& event) override {
    return socket_->send_text(json_text(event)) == net::WebSocket::Sent::kQueued;
  }
  bool send_error(std::string_view message, std::string_view type) override {
    return send({{"type", "error"}, {"error", {{"message", message}, {"type", type}}}});
  }
  void close(std::uint16_t code, std::string_view reason) override { socket_->close(code, reason); }
  void abandon(std::uint16_t code, std::string_view reason) override {
    socket_->abandon(code, reason);
  }
  void wake() override { socket_->wake(); }
  std::size_t queued_bytes() const override { return socket_->queued_bytes(); }

 private:
  std::shared_ptr<net::WebSocket> socket_;
};

class SocketGate final : public net::WebSocketHandler {
 public:
  explicit SocketGate(SocketGateSetup setup) : setup_(std::move(setup)) {}

  void on_open(const std::shared_ptr<net::WebSocket>& socket) override {
    raw_ = socket;
    json_ = std::make_shared<JsonOverWebSocket>(socket);
    if (setup_.room) {
      setup_.room->on_open(json_);
      return;
    }
    socket->set_deadline(std::chrono::steady_clock::now() + kAuthTimeout,
                         net::close_code::kPolicyViolation, "authentication required");
  }

  void on_text(std::string_view text) override {
    auto message = nlohmann::json::parse(text, nullptr, false);
    if (message.is_discarded()) {
      // nlohmann's own message, as Lemonade sends it, needs the exception.
      std::string why = "syntax error";
      try {
        const auto parsed = nlohmann::json::parse(text);  // throws: it was discarded above
        why = parsed.type_name();
      } catch (const nlohmann::json::exception& e) {
        why = e.what();
      }
      json_->send_error("Invalid JSON: " + why);
      return;
    }
    auto type = message.is_object() ? message.find("type") : message.end();
    if (!message.is_object() || type == message.end() || !type->is_string()) {
      json_->send_error("Expected a JSON object with a string 'type'");
      return;
    }
    const std::string name = type->get<std::string>();
    if (name == "auth") {
      authenticate(message);
      return;
    }
    if (!setup_.room) {
      json_->send_error("Unauthorized. Please authenticate first by sending an auth message.");
      return;
    }
    setup_.room->on_message(name, message);
  }

  void on_wake() override {
    if (setup_.room) {
      setup_.room->on_wake();
    }
  }

  void on_closed(std::uint16_t /*code*/) override {
    if (setup_.room) {
      setup_.room->on_closed();
      setup_.room.reset();
    }
    json_.reset();
  }

 private:
  void authenticate(const nlohmann::json& message) {
    std::string token;
    for (const char* field : {"token", "api_key"}) {
      if (auto it = message.find(field); it != message.end() && it->is_string() && token.empty()) {
        token = it->get<std::string>();
      }
    }
    if (token.size() > 7 && net::iequals(std::string_view(token).substr(0, 7), "Bearer ")) {
      token.erase(0, 7);
    }
    auto ring = setup_.keys();
    const ApiKey* key = nullptr;
    if (ring && !ring->empty()) {
      key = ring->find(token);
      if (key == nullptr) {
        if (++failed_ >= kMaxFailedAuths) {
          json_->send_error("Invalid API key");
          json_->close(net::close_code::kPolicyViolation, "too many failed authentications");
          return;
        }
        json_->send_error("Invalid API key");
        return;
      }
      if (!key->has(setup_.route->scope)) {
        json_->send_error("API key '" + key->name + "' has the scopes " + key->scope_list() +
                          "; this socket needs '" + scope_name(setup_.route->scope) + "'");
        return;
      }
    }
    if (setup_.room) {
      json_->send({{"type", "auth.ok"}});  // already open: the key is fine too
      return;
    }
    SocketCaller caller{std::move(ring), key, setup_.caller.remote_addr};
    auto made = setup_.route->open(setup_.request, caller);
    if (!made.ok()) {
      json_->send_error(made.error().message());
      json_->close(net::close_code::kPolicyViolation, "refused");
      return;
    }
    setup_.caller = std::move(caller);
    setup_.room = *made;
    if (auto socket = raw_.lock()) {
      socket->clear_deadline();
      socket->set_max_message(setup_.route->max_message_bytes);
    }
    json_->send({{"type", "auth.ok"}});
    setup_.room->on_open(json_);
  }

  SocketGateSetup setup_;
  std::weak_ptr<net::WebSocket> raw_;
  std::shared_ptr<JsonSocket> json_;
  int failed_ = 0;
};

}  // namespace

std::optional<std::string> choose_subprotocol(const net::Request& request) {
  const auto offered = net::offered_subprotocols(request);
  if (offered.empty()) {
    return std::string();
  }
  for (std::string_view wanted : {kLemonadeProtocol, kOpenAiProtocol}) {
    for (const auto& p : offered) {
      if (p == wanted) {
        return p;
      }
    }
  }
  return std::nullopt;  // only credentials, or protocols this router does not speak
}

std::shared_ptr<net::WebSocketHandler> make_socket_gate(SocketGateSetup setup) {
  setup.request.context.reset();
  setup.request.body.clear();
  return std::make_shared<SocketGate>(std::move(setup));
}

}  // namespace lemon::http
