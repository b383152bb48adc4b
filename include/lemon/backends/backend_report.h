// BackendReport: what a backend says of itself while it loads and runs, as
// llama-server does in its router's child mode (tools/server/server-models.cpp,
// server_child): with LLAMA_SERVER_ROUTER_PORT in its environment it writes
// lines
//
//   cmd_child_to_router:state:{"state":"loading","payload":{"stages":["text_model"],
//                                                          "current":"text_model","value":0.42}}
//   cmd_child_to_router:state:{"state":"ready","payload":{<its /v1/models entry>}}
//   cmd_child_to_router:state:{"state":"sleeping","payload":null}
//
// on its standard output: load progress per stage (text_model, then
// spec_model, then mmproj_model; `value` is the current stage's fraction),
// `ready` once it serves (with its model's info the first time, null after a
// wake from sleep), `sleeping` when --sleep-idle-seconds frees the model.
// A stage's start may come as {"stage":"mmproj_model"} without a value.
//
// BackendReportBoard keeps the latest state of one server and tells a
// listener of each change (the router turns them into events).
//
// Thread-safety: parse_backend_report_line is pure. A BackendReportBoard may
// be used from any thread; its listener runs on the thread that reported
// the change (the process monitor's), with no lock of the board held.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/core/mutex.h"

namespace lemon {

// The prefix of llama-server's state lines.
inline constexpr std::string_view kChildStatePrefix = "cmd_child_to_router:state:";
// What llama-server's child reads on its standard input to stop gracefully
// (once its model is loaded; it exits with status 1 at end of file).
inline constexpr std::string_view kChildExitCommand = "cmd_router_to_child:exit\n";

struct LoadProgress {
  std::vector<std::string> stages;  // the load's plan, in order
  std::string current;              // the stage under way
  std::optional<double> value;      // 0..1 of the current stage; unset at a stage's start
  bool operator==(const LoadProgress&) const = default;
};

struct BackendReport {
  enum class Phase { kLoading, kReady, kSleeping };
  Phase phase = Phase::kLoading;
  std::optional<LoadProgress> progress;  // kLoading
  // kReady: the backend's model info (its /v1/models entry, with "meta"),
  // the first time; null when it wakes from sleep.
  nlohmann::json info;
  // kReady after kSleeping.
  bool woke = false;
};

const char* backend_phase_name(BackendReport::Phase phase);  // "loading", "ready", "sleeping"

// The state a line reports, or nullopt for any other line (or a state line
// that is malformed or names a state this router does not know).
std::optional<BackendReport> parse_backend_report_line(std::string_view line);

// {"stages":[...],"current":...,"value":...} (value left out when unset).
nlohmann::json load_progress_json(const LoadProgress& progress);

class BackendReportBoard {
 public:
  using Listener = std::function<void(const BackendReport&)>;

  // Set before the backend starts.
  void set_listener(Listener listener) LEMON_EXCLUDES(mu_);
  // A new state: kept and told to the listener (`woke` is filled in).
  void report(BackendReport state) LEMON_EXCLUDES(mu_);
  // The latest state; nullopt before the first.
  std::optional<BackendReport> latest() const LEMON_EXCLUDES(mu_);
  // Whether the backend has said it is ready since it started.
  bool ready() const LEMON_EXCLUDES(mu_);
  // Waits up to `timeout` for ready(); returns it.
  bool wait_ready(std::chrono::milliseconds timeout) const LEMON_EXCLUDES(mu_);
  // Forgets everything but the listener (a new process).
  void reset() LEMON_EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  mutable CondVar cv_;
  Listener listener_ LEMON_GUARDED_BY(mu_);
  std::optional<BackendReport> latest_ LEMON_GUARDED_BY(mu_);
  bool ready_ LEMON_GUARDED_BY(mu_) = false;
};

}  // namespace lemon
