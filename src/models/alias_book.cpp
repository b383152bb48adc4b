#include "lemon/models/alias_book.h"

#include <set>

#include "lemon/core/atomic_file.h"
#include "lemon/core/mutex.h"
#include "lemon/models/model_names.h"
#include "lemon/models/user_models.h"

namespace lemon {

struct AliasBook::State {
  State(std::string p, std::function<bool(std::string_view)> named)
      : path(std::move(p)), file(path), model_named(std::move(named)) {}

  const std::string path;
  mutable Mutex mu;
  mutable WatchedJsonFile file LEMON_GUARDED_BY(mu);
  Mutex write_mu;  // one set() or remove() at a time, read to write
  const std::function<bool(std::string_view)> model_named;

  std::map<std::string, std::string> read() const LEMON_EXCLUDES(mu) {
    std::map<std::string, std::string> out;
    if (path.empty()) {
      return out;
    }
    MutexLock lock(mu);
    file.refresh();
    for (const auto& [alias, target] : file.value().items()) {
      if (target.is_string() && !target.get<std::string>().empty()) {
        out.emplace(alias, target.get<std::string>());
      }
    }
    return out;
  }
};

namespace {

// The end of `alias`'s chain in `book`; nullopt when `alias` is no alias.
Result<std::optional<std::string>> chain_end(const std::map<std::string, std::string>& book,
                                             std::string_view alias) {
  auto it = book.find(std::string(alias));
  if (it == book.end()) {
    return std::optional<std::string>();
  }
  std::set<std::string> seen = {it->first};
  std::string target = it->second;
  for (int depth = 1;; ++depth) {
    auto next = book.find(target);
    if (next == book.end()) {
      return std::optional<std::string>(target);
    }
    if (!seen.insert(target).second) {
      return Error(ErrorCode::kAliasConflict,
                   "alias '" + std::string(alias) + "' loops back through '" + target + "'",
                   "alias");
    }
    if (depth >= kMaxAliasDepth) {
      return Error(ErrorCode::kAliasConflict,
                   "alias '" + std::string(alias) + "' is a chain of more than " +
                       std::to_string(kMaxAliasDepth) + " aliases",
                   "alias");
    }
    target = next->second;
  }
}

bool takes_reserved_prefix(std::string_view name) {
  return name.starts_with(kUserPrefix) || name.starts_with(kExtraPrefix) ||
         name.starts_with(kBuiltinPrefix);
}

}  // namespace

AliasBook::AliasBook(std::string path, std::function<bool(std::string_view)> model_named)
    : state_(std::make_unique<State>(std::move(path), std::move(model_named))) {}

AliasBook::~AliasBook() = default;

std::map<std::string, std::string> AliasBook::all() const {
  return state_->read();
}

Result<std::optional<std::string>> AliasBook::follow(std::string_view alias) const {
  return chain_end(state_->read(), alias);
}

Status AliasBook::set(const std::string& alias, const std::string& target) {
  State& s = *state_;
  if (alias.empty() || target.empty()) {
    return Error(ErrorCode::kInvalidRequest, "an alias needs both 'alias' and 'target'",
                 alias.empty() ? "alias" : "target");
  }
  if (alias == target) {
    return Error(ErrorCode::kInvalidAlias, "alias '" + alias + "' cannot stand for itself",
                 "alias");
  }
  if (takes_reserved_prefix(alias)) {
    return Error(ErrorCode::kInvalidAlias,
                 "alias '" + alias + "' takes a reserved prefix (user., extra., builtin.)",
                 "alias");
  }
  if (s.model_named(alias)) {
    return Error(ErrorCode::kAliasConflict, "alias '" + alias + "' is already a model's name",
                 "alias");
  }
  if (s.path.empty()) {
    return Error(ErrorCode::kInternal, "no cache directory: cannot keep aliases");
  }
  MutexLock write(s.write_mu);
  auto book = s.read();
  book[alias] = target;
  if (auto end = chain_end(book, alias); !end.ok()) {
    return std::move(end).error();
  }
  auto file = read_json_object_for_update(s.path);
  if (!file.ok()) {
    return std::move(file).error();
  }
  (*file)[alias] = target;
  return write_file_atomically(s.path, file->dump(2) + "\n");
}

Status AliasBook::remove(const std::string& alias) {
  State& s = *state_;
  MutexLock write(s.write_mu);
  if (!s.read().contains(alias)) {
    return Error(ErrorCode::kAliasNotFound, "there is no alias '" + alias + "'", "alias");
  }
  auto file = read_json_object_for_update(s.path);
  if (!file.ok()) {
    return std::move(file).error();
  }
  file->erase(alias);
  return write_file_atomically(s.path, file->dump(2) + "\n");
}

}  // namespace lemon
