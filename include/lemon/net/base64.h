// Base64 (RFC 4648 §4) and its URL-safe alphabet (§5), with OpenSSL doing
// the work: the WebSocket handshake's key and answer, credentials a browser
// passes in Sec-WebSocket-Protocol, audio a realtime client appends, and
// embeddings sent as base64.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lemon::net {

// Standard alphabet, padded with '='.
std::string base64_encode(std::string_view bytes);

// Decodes standard base64: only the alphabet, a length that is a multiple
// of four, and at most two '=' at the end. nullopt for anything else
// (whitespace included).
std::optional<std::string> base64_decode(std::string_view text);

// Decodes the URL-safe alphabet ('-' and '_'), padding optional.
std::optional<std::string> base64url_decode(std::string_view text);

}  // namespace lemon::net
