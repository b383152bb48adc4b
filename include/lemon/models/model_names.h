// Model names as clients send them, and as the router lists them.
//
// Internally (the catalogue, the router, the files) a model has one name: a
// built-in "X", a registered "user.X", a discovered "extra.x.gguf" or
// "extra.<folder>". Clients of Lemonade 9.4.1 send those names; clients of
// Lemonade 11 also send canonical ids ("builtin.X", "extra.x") and bare
// names of registered models ("X" for "user.X"). name_candidates() lists,
// in order, the internal names an input may stand for; the first that
// exists is the model. A ":" in a name is resolved in this order: an exact
// registered name or alias; "X:latest" as "X"; "owner/repo:VARIANT" (a "/"
// before the colon) as a hub checkpoint and variant (not here: the
// catalogue only names registered models); otherwise not found.
//
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/models/model_info.h"

namespace lemon {

inline constexpr std::string_view kUserPrefix = "user.";
inline constexpr std::string_view kExtraPrefix = "extra.";
inline constexpr std::string_view kBuiltinPrefix = "builtin.";

// An internal name an input may stand for.
struct NameCandidate {
  std::string name;
  bool builtin_only = false;  // only a built-in entry of that name counts
};

// The internal names `input` may stand for, in the order they are tried
// (after the input itself as a registered name or an alias):
//   "builtin.X" -> the built-in X;
//   "extra.X"   -> "extra.X", "extra.X.gguf";
//   bare "X"    -> "X" (a built-in), "user.X", "extra.X.gguf", "extra.X";
//   "N:latest"  -> whatever "N" stands for.
// Never empty: the input itself comes first.
std::vector<NameCandidate> name_candidates(std::string_view input);

// Names no registration may take: "builtin.*" and "extra.*", and the same
// after "user." ("user.builtin.X" would take the id "builtin.X").
bool is_reserved_model_name(std::string_view name);
// kReservedModelName naming `name` when it is reserved.
Status check_registration_name(std::string_view name);

// The canonical id of an entry, Lemonade 11's key in recipe_options.json:
// "builtin.X", "user.X" or "extra.<stem>" (the 9.4.1 file name without
// ".gguf").
std::string canonical_model_id(const ModelInfo& info);

// The id a listing shows (GET /models): a user model by its bare name
// unless a built-in of that name exists (`builtin_named`), then as
// "user.X"; every other entry by its internal name.
std::string public_model_id(const ModelInfo& info, bool builtin_named);

// recipe_options.json with each built-in model's bare key (Lemonade 9.4.1's
// "X") moved to its canonical id "builtin.X"; where both forms are present
// the canonical one stays. `moved` is how many keys moved.
nlohmann::ordered_json canonical_option_keys(
    const nlohmann::ordered_json& file, const std::function<bool(const std::string&)>& is_builtin,
    int& moved);

}  // namespace lemon
