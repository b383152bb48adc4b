// The registration half of POST /pull for a collection (Lemonade 11:
// recipe "collection.router" or "collection.omni" with "components"),
// checked in Lemonade's order:
//   1. the name is "user.<key>" (a key as user_registration.h allows);
//   2. "components" is an array of strings, and not empty;
//   3. no component is the collection itself;
//   4. no component is a collection;
//   5. every component is registered (a bare name may stand for
//      "user.<name>"), and is written under the name the catalogue knows.
// A router's policy ("version", "routing") is kept as given; the routing
// layer checks it (the caller, before it saves the entry). An omni may
// carry a "system_prompt". Inline definitions ("models") are refused:
// register each component first.
//
// The entry: recipe, components, labels ["chat", "custom"], suggested, and
// the router's version and routing or the omni's system_prompt.
//
// Ownership/thread-safety: pure functions; `registered` is asked for names.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/models/model_info.h"
#include "lemon/models/user_registration.h"

namespace lemon {

// The registered entry named `name`, or nullopt.
using RegisteredLookup = std::function<std::optional<ModelInfo>(std::string_view name)>;

// True when the body registers a collection (its recipe is one).
bool is_collection_registration(const nlohmann::json& body);

// The name under which `name` is registered: itself, or "user.<name>";
// nullopt when neither is.
std::optional<std::string> registered_name(std::string_view name,
                                           const RegisteredLookup& registered);

// The checked entry (kInvalidRequest, param "model_name" or "components").
Result<UserModelRegistration> parse_collection_registration(std::string_view model_name,
                                                            const nlohmann::json& body,
                                                            const RegisteredLookup& registered);

// The collections among `entries` with their components named as the
// registrations know them ("a" -> "user.a"), as a registration stores them:
// `entries` themselves, then `others`; a name neither knows stays as written.
void canonicalize_components(std::vector<ModelInfo>& entries, const RegisteredLookup& others);

// The collections among `registered` that name `model` as a component.
std::vector<std::string> collections_using(const std::vector<ModelInfo>& registered,
                                           std::string_view model);

}  // namespace lemon
