// AliasBook: Lemonade 11's model aliases, `aliases.json` in the cache dir
// ({"alias": "target", ...}), listed, set and deleted by /internal/aliases.
// An alias is a name of its own (it may hold ":" or "/") that stands for
// another name: a model's, in any form a client may send, or another alias
// (chains of at most 10). The file is re-read when it changes and rewritten
// atomically; a malformed file is never overwritten.
//
// Ownership: holds a callback into the catalogue that owns it.
// Thread-safety: every method may be called from any thread; writers are
// serialized.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "lemon/core/error.h"

namespace lemon {

inline constexpr int kMaxAliasDepth = 10;

class AliasBook {
 public:
  // `path` may be empty (no cache dir: no aliases). `model_named` tells
  // whether a name (in any client form, but no alias) is a model's.
  AliasBook(std::string path, std::function<bool(std::string_view)> model_named);
  ~AliasBook();
  AliasBook(const AliasBook&) = delete;
  AliasBook& operator=(const AliasBook&) = delete;

  // alias -> target, as written.
  std::map<std::string, std::string> all() const;
  // The last name of `alias`'s chain (no alias itself), or nullopt when
  // `alias` is no alias; kAliasConflict for a chain that loops or runs past
  // kMaxAliasDepth.
  Result<std::optional<std::string>> follow(std::string_view alias) const;
  // kInvalidRequest for an empty alias or target; kInvalidAlias for one
  // that names itself or takes a reserved prefix ("user.", "extra.",
  // "builtin."); kAliasConflict for one that is a model's name, or that
  // would make a loop or a chain past kMaxAliasDepth.
  Status set(const std::string& alias, const std::string& target);
  // kAliasNotFound when there is no such alias.
  Status remove(const std::string& alias);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace lemon
