// Router: which WrappedServers are loaded, and the only place that loads,
// evicts and stops them.
//
// - acquire(model) returns a Lease on a ready server, loading it first when
//   needed. The Lease is granted in the same step that publishes the new
//   server, so nothing can evict it before the request starts.
// - Loads run one at a time on the loader thread, in FIFO order; concurrent
//   requests for the same model share one load. Eviction decisions are made
//   when a load leaves the queue (plan_eviction over a snapshot).
// - A server with Leases is never stopped: eviction marks it draining (no new
//   Leases) and waits for its in-flight count to reach zero, however long.
// - No wait holds a lock that another caller needs: waits use condition
//   variables (which release their lock), and spawning, readiness polling and
//   stopping run with no router lock held, so loaded(), view() and unrelated
//   requests are never blocked.
// - A failed load evicts everything and retries once only for failures a
//   retry can fix (typed ErrorCode); missing files, bad arguments, unknown
//   recipe and missing binary evict nothing. A load that ran out of memory
//   (kOutOfMemory) instead unloads the idle models of its device one at a
//   time, least recently used first, retrying after each, and evicts
//   everything only before its last try; kOutOfMemory (507) if that fails
//   too.
// - A backend that exits unexpectedly is dropped from the table at once; the
//   next request loads it again.
// - A server with request slots (llama.cpp's --parallel) is never leased more
//   requests than it has slots, plus RequestSlots::queued_ahead (one request
//   waiting in llama-server's own queue) while no session holds or restores
//   one of its slots and the model may not gain replicas; the rest wait in a
//   first-come line per model. Requests waiting for a load or a slot are
//   bounded per model and in all (kQueueFull, Retry-After).
// - A model whose loads failed twice in a row rests (LoadCooldown): requests
//   get the last load error with Retry-After until the rest ends or an
//   explicit load() resets it.
// - A model may run as several replicas: requests go to the replica with the
//   fewest in flight; when every replica is busy and requests have waited
//   --scale-up-after, the housekeeper queues one more (up to max_replicas),
//   and a replica idle for --scale-down-after stops (never the last). A
//   model idle for its keep-alive is unloaded. A replica that holds sessions
//   (pin_backend_slot) is exempt from both.
// - Fairness: a load that would evict a busy model (its type at its limit
//   and every model of the type busy) waits while that model keeps serving,
//   at most --max-starvation; loads that evict nothing busy go first
//   meanwhile.
//
// Thread-safety: every public method may be called from any thread.
//
// Router is the public face. Its parts, each owning its state behind its
// own lock (the server table, the load queue with the loader thread, the
// housekeeper with its thread), are in src/router/router_parts.h, which no
// other layer sees; docs/architecture.md "The router's parts" draws them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lemon/backends/server_factory.h"
#include "lemon/backends/slot_store.h"
#include "lemon/models/catalogue.h"
#include "lemon/router/device_memory.h"
#include "lemon/router/eviction_policy.h"
#include "lemon/router/footprint_store.h"
#include "lemon/router/lease.h"
#include "lemon/router/load_cooldown.h"
#include "lemon/router/loaded_server_info.h"
#include "lemon/router/memory_policy.h"
#include "lemon/router/router_view.h"
#include "lemon/router/slot_limits.h"

namespace lemon {

struct RouterParts;
class LoadQueue;

// What a waiting caller lets the router do while it waits for a load.
struct WaitHooks {
  // Polled about every tick_interval; true means the caller is gone: stop
  // waiting (the load itself continues) and return kCancelled.
  std::function<bool()> cancelled;
  // Called about every tick_interval while waiting (SSE keepalives).
  std::function<void()> on_tick;
  std::chrono::milliseconds tick_interval{1000};
};

// Things the router did, for logs and tests (tests wait on them instead of
// sleeping). Delivered on the thread that did the thing, never under a lock
// of the router's.
struct RouterEvent {
  enum class Kind {
    kLoadQueued,                // model (a new load entered the queue)
    kLoadJoined,                // model (a caller joined a queued or running load)
    kLoadStarted,               // model (a load left the queue)
    kEvictionPlanned,           // model = victim, detail = reason
    kDrainWaiting,              // model = victim with requests in flight
    kServerStopped,             // model
    kServerCrashed,             // model
    kLoadSucceeded,             // model
    kLoadFailed,                // model, code
    kRetryingAfterEvictAll,     // model, code of the first failure
    kRetryingAfterOutOfMemory,  // model, detail = the model just unloaded to make room
    kWaitingForSlot,            // model, detail = requests now in its line
    kReplicaStarted,            // model, detail = replica index (a scale-up)
    kReplicaStopped,            // model, detail = reason (scale-down, keep-alive)
    kSlotSaved,                 // model, slot_file
    kSlotRestored,              // model, slot_file
    kSlotRestoreFailed,         // model, slot_file (code, detail: why)
    kBackendReport,             // model, report (load progress, ready, sleeping)
  };
  Kind kind;
  std::string model;
  std::string detail;
  std::optional<ErrorCode> code;
  // kServerStopped: seconds from the stop's signal to the process reaped,
  // and how it ended ("exit code 0", "killed by signal 9 (SIGKILL)").
  double stop_s = 0.0;
  std::string exit = {};
  // kSlotSaved, kSlotRestored, kSlotRestoreFailed: the slot, its tokens and
  // bytes, and how long it took.
  SlotFileEvent slot_file = {};
  // kBackendReport: what one of the model's servers said of itself
  // (WrappedServer::backend_report), delivered on the thread that read it.
  BackendReport report = {};
};
const char* router_event_name(RouterEvent::Kind kind);

struct RouterConfig {
  SlotLimits limits;
  // CLI/environment layer of the load options (already inheriting defaults).
  RecipeOptions cli_options;
  // Requests that may wait (for a load or a free slot) for one model, and
  // in all; more get kQueueFull.
  int max_queued_per_model = 256;
  int max_queued_total = 1024;
  // The pool: replicas per model (a model's `max_replicas` load
  // option wins), when to add and remove one, how long an idle model stays
  // loaded (nullopt: forever), and how long fairness may hold a load back.
  int max_replicas = 1;
  std::chrono::milliseconds scale_up_after{2000};
  std::chrono::milliseconds scale_down_after{60000};
  std::optional<std::chrono::milliseconds> keep_alive;
  std::chrono::milliseconds max_starvation{30000};
  // Default models: each is loaded at start and, after
  // another model's load evicted it, loaded again once every server of its
  // type has been idle for default_model_delay (defaults_to_load()). One
  // that fails to load, is unloaded explicitly or expires by keep-alive is
  // not brought back.
  std::vector<std::string> default_models;
  std::chrono::milliseconds default_model_delay{30000};
  // How often the housekeeper looks (scale, keep-alive); tests shorten it.
  std::chrono::milliseconds housekeeping_interval{200};
  // Memory: where device memory is read (null: no memory
  // limit, only slot limits), the budget, the free memory below which idle
  // models are unloaded, and how often devices and servers are measured.
  std::shared_ptr<DeviceMemorySource> memory;
  BudgetRule memory_budget;
  std::int64_t memory_margin = 256LL << 20;
  // The configuration asks for a budget (`memory` is set only at start).
  bool memory_budget_on = false;
  std::chrono::milliseconds memory_poll_interval{10000};
  // --auto-evict and --auto-evict-threshold-pct (LiveRouterSettings).
  bool auto_evict = false;
  double auto_evict_threshold = 0.9;
  std::function<void(const RouterEvent&)> on_event;
  // Keeps llama.cpp slots across stops: restores into a new
  // server (not a replica) before it is published, and saves from a server
  // before every planned stop (eviction, unload, keep-alive, scale-down,
  // memory pressure, shutdown), never before a crash's. Null: none.
  SlotStore* slot_store = nullptr;
  // Footprints remembered across loads (footprint_store.h): a server's
  // measurements are kept per configuration when it settles and while it
  // runs, and the next admission of the configuration is charged them with
  // a margin instead of the estimate. Null: estimates only.
  FootprintStore* footprints = nullptr;
};

// The settings a running router takes again (a reload of the
// configuration): from the next decision on, the slot limits (the next
// load; models loaded beyond a lowered limit stay until one is evicted),
// the keep-alive, the pool's scale-up and scale-down times, fairness'
// starvation bound and the default model's delay.
struct LiveRouterSettings {
  SlotLimits limits;
  std::optional<std::chrono::milliseconds> keep_alive;
  std::chrono::milliseconds scale_up_after{2000};
  std::chrono::milliseconds scale_down_after{60000};
  std::chrono::milliseconds max_starvation{30000};
  std::chrono::milliseconds default_model_delay{30000};
  // The CLI layer of load options (--ctx-size, --llamacpp-args, ...). A
  // change reloads each loaded model whose effective options it changes,
  // once that model is idle.
  RecipeOptions cli_options;
  // --memory-budget and --memory-margin, while the budget is on (nullopt:
  // keep the ones in force; turning the budget on or off needs a restart).
  std::optional<BudgetRule> memory_budget;
  std::int64_t memory_margin = 256LL << 20;
  // Lemonade 11's auto_evict: a GPU this full (a fraction in use) unloads
  // the least recently used idle model (Router::relieve_pressure).
  bool auto_evict = false;
  double auto_evict_threshold = 0.9;
  static LiveRouterSettings of(const RouterConfig& c) {
    return {c.limits,
            c.keep_alive,
            c.scale_up_after,
            c.scale_down_after,
            c.max_starvation,
            c.default_model_delay,
            c.cli_options,
            c.memory_budget_on ? std::optional<BudgetRule>(c.memory_budget) : std::nullopt,
            c.memory_margin,
            c.auto_evict,
            c.auto_evict_threshold};
  }
};

// A request's keep_alive (Ollama): how long its model stays loaded once idle.
// Negative: forever; zero: unload as soon as it is idle.
using KeepAlive = std::chrono::milliseconds;

class Router {
 public:
  Router(const ModelResolver& models, ServerFactory& factory, RouterConfig config);
  ~Router();  // shutdown()
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // A Lease on the loaded server for `model_name`, auto-loading it with its
  // default options (recipe_options.json > CLI > defaults) when needed.
  // When `required` is given, a model of another type is refused with
  // kUnsupportedOperation before anything is loaded. A loaded model is
  // leased without touching the catalogue or the disk.
  // When the server's slots are all busy, waits in its line for one.
  // Errors: kModelNotFound, kUnsupportedOperation, kModelFilesMissing, load
  // failures (typed, with Retry-After while the model rests after failed
  // loads), kQueueFull, or kCancelled if hooks.cancelled() turned true while
  // waiting.
  // `keep_alive` (a request's own) replaces the model's idle time from now on.
  Result<Lease> acquire(std::string_view model_name, const WaitHooks& hooks = {},
                        std::optional<ModelType> required = std::nullopt,
                        std::optional<KeepAlive> keep_alive = std::nullopt);

  // A Lease on the one server `server_id` (LoadedServerInfo::server_id), for
  // a session pinned to it: waits while all its slots are busy. kSessionLost
  // once that server is gone or draining (evicted, unloaded, crashed); the
  // session's owner may then move it.
  // With `backend_slot` >= 0, also waits until that llama.cpp slot is free
  // and names it in the lease.
  Result<Lease> acquire_server(std::uint64_t server_id, int backend_slot = -1,
                               const WaitHooks& hooks = {});
  // Reserves (or frees) one llama.cpp slot of a server for a session:
  // requests without a session are then given other slots. False when the
  // server is gone or draining. A server with a reserved slot is not stopped
  // by scale-down or keep-alive (only by eviction, unload or a crash).
  bool pin_backend_slot(std::uint64_t server_id, int backend_slot);
  void unpin_backend_slot(std::uint64_t server_id, int backend_slot);

  // Explicit load: options layered as request > recipe_options.json > CLI >
  // defaults. Already loaded with the same effective options: no-op that
  // refreshes the LRU clock. Loaded with different options: an atomic reload
  // (requests that arrive meanwhile wait for the new server). Ends a
  // model's rest after failed loads (LoadCooldown).
  // `standing`'s pin and priority, when given, are set in the step that
  // publishes the model (or at once when it is already loaded with these
  // options), so no other load can evict it in between.
  // Unset, a reload keeps the model's and a fresh load takes the saved ones.
  // A load that only a higher-priority model's eviction would make room for
  // waits in the queue until that model leaves (outranking_in_the_way()).
  Status load(std::string_view model_name, const RecipeOptions& request_options,
              const WaitHooks& hooks = {}, const LoadStanding& standing = {});

  // Unloads one model after it drains. kModelNotLoaded if it is not loaded.
  // A pinned model goes too: an explicit unload is the one thing that may.
  Status unload(std::string_view model_name);
  // Pins or unpins a loaded model (POST /internal/pin): a pinned model is never evicted (by the
  // slot limit, memory admission or pressure, out-of-memory recovery), expired by keep-alive or
  // scaled down; a load that could start only by evicting it fails with kSlotsPinned and evicts
  // nothing. The pin lasts while the model is loaded (a reload keeps it); recipe_options.json's
  // "pinned" pins it at every load. kModelNotLoaded if it is not loaded.
  Status set_pinned(std::string_view model_name, bool pinned);
  // Deletes the slots saved for `model` (RouterConfig::slot_store), as
  // /delete does; and the bytes they take now (0: none, or no store).
  void forget_saved_slots(const std::string& model);
  long long saved_slot_bytes(const std::string& model) const;
  // What the last configuration of `model` measured was measured to hold
  // (RouterConfig::footprints), per device; nullopt when none was.
  std::optional<DeviceBytes> remembered_footprint(const std::string& model) const;

  // While a LoadBlock lives, new loads of its model (explicit or automatic)
  // fail with kConflict; leases on a loaded server are not affected. The
  // model store holds one while it deletes a model's files (block, unload,
  // delete). Blocks of the same model nest.
  class LoadBlock {
   public:
    LoadBlock(LoadBlock&& other) noexcept
        : queue_(std::exchange(other.queue_, nullptr)), model_(std::move(other.model_)) {}
    LoadBlock& operator=(LoadBlock&&) = delete;
    LoadBlock(const LoadBlock&) = delete;
    LoadBlock& operator=(const LoadBlock&) = delete;
    ~LoadBlock();

   private:
    friend class Router;
    LoadBlock(LoadQueue* queue, std::string model) : queue_(queue), model_(std::move(model)) {}
    LoadQueue* queue_;
    std::string model_;
  };
  LoadBlock block_loads(std::string_view model_name);
  // Unloads every loaded model, each after it drains.
  void unload_all();
  // Lemonade 11's GPU-pressure eviction: with --auto-evict on and
  // `used_fraction` of a GPU's memory in use at or above
  // --auto-evict-threshold-pct, the least recently used idle, unpinned
  // model of the lowest priority is unloaded (POST
  // /internal/simulate-vram-pressure; the memory poll does it for each GPU
  // reading). Returns the models unloaded (none below the threshold).
  std::vector<std::string> relieve_pressure(double used_fraction);

  std::vector<LoadedServerInfo> loaded() const;
  // Unix time in milliseconds at which the keep-alive unloads each loaded
  // model if nothing uses it meanwhile (keep_alive_deadline; Ollama's
  // expires_at); a model the keep-alive never unloads is absent. Apart from
  // loaded(), so /health and the other readers of loaded() never pay for it.
  std::map<std::string, std::int64_t> keep_alive_expiries() const;
  // The latest published view: takes no lock that requests take (only a
  // leaf lock around a pointer copy), so scrapes never slow requests.
  std::shared_ptr<const RouterView> view() const;
  // The most recently loaded server still loaded (health's model_loaded).
  std::optional<LoadedServerInfo> most_recently_loaded() const;
  // The slot limits in force (from the published view: no lock requests take).
  SlotLimits limits() const;
  // The CLI layer of load options in force (a reload may change it).
  RecipeOptions cli_options() const;
  // Takes `settings` from now on (a configuration reload).
  void apply_live_settings(const LiveRouterSettings& settings);

  // Fails queued loads with kShuttingDown, cancels the running one, and stops
  // every server. Idempotent; every caller returns once it is complete.
  void shutdown();

 private:
  // The name the router keys `model_name`'s servers by (ModelResolver::
  // internal_name): every form of a model's name reaches the same server.
  std::string named(std::string_view model_name) const;

  std::unique_ptr<RouterParts> parts_;
};

}  // namespace lemon
