#include "lemon/models/gguf_header_cache.h"
#include "lemon/core/mutex.h"

#include <sys/stat.h>

#include <utility>

namespace lemon {

GgufHeaderCache::GgufHeaderCache(Reader reader, std::size_t capacity)
    : reader_(std::move(reader)), capacity_(capacity) {}

GgufHeaderCache& GgufHeaderCache::shared() {
  static GgufHeaderCache cache;
  return cache;
}

Result<GgufHeader> GgufHeaderCache::get(const std::string& path) {
  // stat() follows the hub cache's symlinks to the blob: a new snapshot of
  // the same name is a new identity.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return reader_(path);  // the reader says what is wrong with it
  }
  const Identity identity{
      static_cast<std::uintmax_t>(st.st_size),
      static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
  {
    MutexLock lock(mu_);
    if (auto it = entries_.find(path); it != entries_.end() && it->second.identity == identity) {
      return it->second.header;
    }
  }
  // Read outside the lock: another load's estimate never waits for it.
  auto header = reader_(path);
  MutexLock lock(mu_);
  if (entries_.size() >= capacity_ && !entries_.contains(path)) {
    entries_.clear();
  }
  entries_.insert_or_assign(path, Entry{identity, header});
  return header;
}

}  // namespace lemon
