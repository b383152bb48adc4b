// GgufHeaderCache: GGUF headers already read, by file identity.
// A memory estimate reads a model's header on every load; a file seen
// before (same path, size and modification time) is answered from memory
// without opening it. A file that changed is read again. A failure is kept
// as well, by the same identity: a file that is not a GGUF (a placeholder, a
// foreign format) costs one read, and one that is still being written
// changes size or time, so it is read again once it has.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "lemon/core/mutex.h"
#include "lemon/models/gguf_header.h"

namespace lemon {

class GgufHeaderCache {
 public:
  using Reader = std::function<Result<GgufHeader>(const std::string& path)>;

  // `reader` reads a header (read_gguf_header; tests count its calls). At
  // most `capacity` files are kept; beyond that the cache starts over.
  explicit GgufHeaderCache(Reader reader = read_gguf_header, std::size_t capacity = 256);

  // The header of `path`: from memory when the file is unchanged since it
  // was read, else read (and kept when it parses).
  Result<GgufHeader> get(const std::string& path);

  // The cache every memory estimate uses.
  static GgufHeaderCache& shared();

 private:
  struct Identity {
    std::uintmax_t size = 0;
    std::int64_t mtime_ns = 0;
    bool operator==(const Identity&) const = default;
  };
  struct Entry {
    Identity identity;
    Result<GgufHeader> header;
  };

  Reader reader_;
  std::size_t capacity_;
  Mutex mu_;
  std::map<std::string, Entry> entries_ LEMON_GUARDED_BY(mu_);
};

}  // namespace lemon
