// ModelActivity: what llama.cpp's model list shows beyond the router's
// table, kept from the router's events and the model store's progress: a
// load's progress as the backend reports it, the info its backend gave when
// ready (its /v1/models entry, whose "meta" GET /models adds), the last load
// that failed or the crash, and each download's files.
//
// Thread-safety: every method may be called from any thread; the recording
// ones run on the threads that report (the loader, the process monitor, a
// pull's thread) and take only this object's lock.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lemon/core/mutex.h"
#include "lemon/router/router.h"

namespace lemon::api {

class ModelActivity {
 public:
  // RouterConfig::on_event's events.
  void on_router_event(const RouterEvent& event) LEMON_EXCLUDES(mu_);
  // ModelStore's observer: `model` is the name the pull was started for.
  void on_download_progress(const std::string& model, const std::string& file, std::uint64_t bytes,
                            std::uint64_t total) LEMON_EXCLUDES(mu_);
  void on_download_end(const std::string& model) LEMON_EXCLUDES(mu_);

  struct Of {
    std::optional<LoadProgress> progress;  // while it loads
    nlohmann::json info;                   // its backend's model info once ready; null before
    std::optional<int> failed_exit;        // its last load failed, or it crashed
    std::uint64_t load_events = 0;
  };
  Of of(const std::string& server) const LEMON_EXCLUDES(mu_);
  // {"<file>": {"done", "total"}} of a download under way; null when none.
  nlohmann::ordered_json downloads(const std::string& model) const LEMON_EXCLUDES(mu_);
  // Forgets a model's failure (a reload of the model list clears it, as
  // llama.cpp's does).
  void clear_failures() LEMON_EXCLUDES(mu_);

  // How many load events (queued, joined, started, succeeded, failed) the
  // model has had; wait_for_load_event waits up to `timeout` for one more
  // than `seen`, or for `done()` (asked under this object's lock, after
  // each notify()).
  std::uint64_t load_events(const std::string& server) const LEMON_EXCLUDES(mu_);
  bool wait_for_load_event(const std::string& server, std::uint64_t seen,
                           const std::function<bool()>& done, std::chrono::milliseconds timeout)
      LEMON_EXCLUDES(mu_);
  // Wakes the waiters (something they wait for besides an event changed).
  void notify() LEMON_EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  mutable CondVar changed_;
  std::map<std::string, Of, std::less<>> models_ LEMON_GUARDED_BY(mu_);
  std::map<std::string, nlohmann::ordered_json, std::less<>> downloads_ LEMON_GUARDED_BY(mu_);
};

}  // namespace lemon::api
