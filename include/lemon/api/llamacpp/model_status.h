// llama.cpp's status of a model (tools/server/server-models.h: unloaded,
// loading, loaded, sleeping, downloading, downloaded), read from what this
// router knows of it.
//
//   a server of it in the table (ready, or draining before it stops)
//       loaded; sleeping when every one of them said it sleeps (llama-server
//       with --sleep-idle-seconds in llamacpp_args reports it)
//   a load of it queued or running              loading
//   its files downloading (a pull)              downloading
//   otherwise                                   unloaded
//
// `downloaded` never comes: a finished download is an ordinary model of the
// cache at once (llama.cpp shows `downloaded` until its next list reload).
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/backends/backend_report.h"

namespace lemon::api {

enum class LlamaStatus { kUnloaded, kLoading, kLoaded, kSleeping, kDownloading, kDownloaded };
const char* llama_status_name(LlamaStatus status);

// What the router knows of one model now.
struct ServedState {
  int servers = 0;           // in the table, draining ones included
  int sleeping_servers = 0;  // of those, the ones whose backend said it sleeps
  bool loading = false;      // a load queued or running
  bool downloading = false;  // a pull of its files running
};
LlamaStatus llama_status(const ServedState& state);

// GET /models' "status" object, in llama.cpp's key order: value, args,
// preset (when given), exit_code and failed (after a failed load or a
// crash, while unloaded), then ours: progress (loading: the backend's
// {stages, current, value}; downloading: {"<file>": {done, total}}).
struct StatusDetail {
  LlamaStatus status = LlamaStatus::kUnloaded;
  std::vector<std::string> args;
  std::string preset;                // "" : left out
  std::optional<int> failed_exit;    // the failed load's or crash's exit code
  std::optional<LoadProgress> load;  // kLoading
  nlohmann::ordered_json downloads;  // kDownloading: per file {done, total}; null otherwise
};
nlohmann::ordered_json status_json(const StatusDetail& detail);

}  // namespace lemon::api
