// Who sent a request: the API key it presented, found when
// its head was read (ApiServer's HeadCheck), kept in the request's context
// with the key's requests-at-once lease until it has been answered.
//
// Thread-safety: a Caller belongs to its request's connection thread.
#pragma once

#include <memory>

#include "lemon/http/api_keys.h"
#include "lemon/http/key_limits.h"
#include "lemon/net/message.h"

namespace lemon::http {

struct Caller final : net::RequestContext {
  std::shared_ptr<const KeyRing> ring;  // keeps `key` valid across a reload of the keys
  const ApiKey* key = nullptr;          // nullptr: no keys configured, or a public route
  Scope scope = Scope::kPublic;         // what the route needs
  KeyLimiter::Lease lease;
  // A WebSocket upgrade that presented no key on a router that has keys:
  // its client must authenticate in-band (json_socket.h).
  bool pending_auth = false;
};

// The key of the request's caller, or nullptr (no key needed).
const ApiKey* caller_key(const net::Request& request);

// The 403 for a caller whose key may not use `model`, or nullopt.
std::optional<Error> refuse_model(const ApiKey* key, std::string_view model);

}  // namespace lemon::http
