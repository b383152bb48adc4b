// The WebSocket opening handshake's checks (RFC 6455 §4.2.1, §4.2.2).
#include <openssl/evp.h>

#include "lemon/core/text.h"
#include "lemon/net/base64.h"
#include "lemon/net/websocket.h"
#include "wire_parser.h"

namespace lemon::net {
namespace {

// The GUID every server appends to the client's key (§1.3).
constexpr std::string_view kAcceptGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

Error bad_handshake(std::string why) {
  return Error(ErrorCode::kInvalidRequest, "WebSocket handshake: " + std::move(why));
}

}  // namespace

bool is_websocket_upgrade(const Request& request) {
  return request.method == "GET" && wire::has_token(request.headers, "Upgrade", "websocket") &&
         wire::has_token(request.headers, "Connection", "upgrade");
}

Result<std::string> check_websocket_handshake(const Request& request) {
  if (request.http10) {
    return bad_handshake("needs HTTP/1.1");
  }
  if (request.headers.has("Transfer-Encoding") ||
      (request.headers.has("Content-Length") && request.headers.get("Content-Length") != "0")) {
    return bad_handshake("the upgrade request must have no body");
  }
  std::vector<std::string_view> versions;
  std::vector<std::string_view> keys;
  for (const auto& [name, value] : request.headers.fields()) {
    if (iequals(name, "Sec-WebSocket-Version")) {
      versions.push_back(trim_ows(value));
    } else if (iequals(name, "Sec-WebSocket-Key")) {
      keys.push_back(trim_ows(value));
    }
  }
  if (versions.size() != 1 || versions.front() != "13") {
    Error e(ErrorCode::kUpgradeRequired,
            versions.empty() ? "WebSocket handshake: no Sec-WebSocket-Version (13 is served)"
                             : "WebSocket handshake: only Sec-WebSocket-Version 13 is served");
    return e;
  }
  if (keys.size() != 1) {
    return bad_handshake(keys.empty() ? "no Sec-WebSocket-Key" : "more than one Sec-WebSocket-Key");
  }
  auto nonce = base64_decode(keys.front());
  if (!nonce || nonce->size() != 16) {
    return bad_handshake("Sec-WebSocket-Key must be the base64 of 16 bytes");
  }
  return websocket_accept(keys.front());
}

std::string websocket_accept(std::string_view key) {
  std::string text(key);
  text.append(kAcceptGuid);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (::EVP_Digest(text.data(), text.size(), digest, &length, ::EVP_sha1(), nullptr) != 1) {
    return {};  // no SHA-1 in this OpenSSL: no handshake can succeed
  }
  return base64_encode(std::string_view(reinterpret_cast<const char*>(digest), length));
}

std::vector<std::string> offered_subprotocols(const Request& request) {
  std::vector<std::string> out;
  for (const auto& [name, value] : request.headers.fields()) {
    if (!iequals(name, "Sec-WebSocket-Protocol")) {
      continue;
    }
    for (std::string_view piece : split(value, ',')) {
      std::string_view item = trim_ows(piece);
      if (!item.empty()) {
        out.emplace_back(item);
      }
    }
  }
  return out;
}

}  // namespace lemon::net
