// FootprintFile: the footprints remembered across loads (router's
// FootprintStore), kept in <cache>/footprints.json:
//
//   {"version": 1,
//    "footprints": [{"model": "Qwen3-0.6B-GGUF", "recipe": "llamacpp",
//                    "options": {"ctx_size": 4096, ...}, "device": "ram",
//                    "measured": {"ram": 435159040}, "updated_ms": 1764355200000}]}
//
// Read once when made (a file that is missing is empty; one that is not
// JSON is logged and replaced by the next write); each remember() that
// changes a figure writes it again, atomically (a temporary file, then
// rename). The last entry of a model is its most recently measured
// configuration.
//
// Thread-safety: every method may be called from any thread; the file is
// written under the object's lock, which callers never hold (the router
// calls with none of its own).
#pragma once

#include <filesystem>
#include <vector>

#include "lemon/core/mutex.h"
#include "lemon/router/footprint_store.h"

namespace lemon {

class FootprintFile final : public FootprintStore {
 public:
  explicit FootprintFile(std::filesystem::path path);

  std::optional<DeviceBytes> recall(const FootprintKey& key) const override LEMON_EXCLUDES(mu_);
  void remember(const FootprintKey& key, const DeviceBytes& measured) override LEMON_EXCLUDES(mu_);
  std::optional<DeviceBytes> last_of(const std::string& model) const override LEMON_EXCLUDES(mu_);

 private:
  struct Entry {
    FootprintKey key;
    DeviceBytes measured;
    long long updated_ms = 0;
  };
  void write_locked() const LEMON_REQUIRES(mu_);

  const std::filesystem::path path_;
  mutable Mutex mu_;
  std::vector<Entry> entries_ LEMON_GUARDED_BY(mu_);  // most recently measured last
};

}  // namespace lemon
