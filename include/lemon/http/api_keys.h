// The API keys http checks requests against (auth/api_keys.h), under the
// names http's access checks and the rooms' route registrations use: a
// route needs a Scope, a caller holds an ApiKey of the KeyRing.
//
// Thread-safety: see auth/api_keys.h.
#pragma once

#include "lemon/auth/api_keys.h"

namespace lemon::http {

using auth::ApiKey;
using auth::KeyRing;
using auth::Scope;
using auth::scope_from_name;
using auth::scope_name;
using auth::ScopeSet;

}  // namespace lemon::http
