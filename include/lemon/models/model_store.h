// ModelStore: downloads and deletes the files of catalogue models in the
// Hugging Face hub cache. Routes and auto-load call it; it calls
// the hub (HubClient), the download layer and the cache writer.
//
// - download(name) starts the model's pull on its own thread, or joins the
//   one already running for that name (two pulls share one download). The
//   caller follows it with wait(); when the last follower leaves, the pull is
//   cancelled and its .incomplete files stay for a later resume.
// - A pull lists each repository at `main`, plans the files, checks free
//   disk space for what is left to fetch, then fetches missing blobs one
//   after another (resuming .incomplete files), links each verified blob
//   into snapshots/<commit>/, and finally writes refs/main. Files that are
//   already there (ours, huggingface_hub's, Lemonade's) are not fetched
//   again. A pull of a downloaded model whose hub cannot be reached succeeds
//   with the local copy.
// - Blobs are locked with huggingface_hub's lock files
//   (<hub>/.locks/models--org--name/<etag>.lock, flock), so two models
//   sharing a file, two routers, or huggingface-cli never write one blob at
//   the same time.
// - remove_files(name) deletes exactly that model's snapshot entries, and a
//   blob only when no snapshot entry of the repository links to it anymore.
//   Entries another registered model needs stay. The caller unloads the
//   model first (Router::block_loads + unload).
//
// Ownership: the store owns its pull threads; the destructor cancels and
// joins them. The catalogue must outlive the store.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "lemon/core/error.h"
#include "lemon/download/shared_task.h"
#include "lemon/models/catalogue.h"
#include "lemon/models/hub_client.h"

namespace lemon {

// How a caller follows a download (cancellation, progress, keepalives).
using DownloadWait = download::FollowHooks;

class ModelStore {
 public:
  using Download = download::SharedTasks::Follower;

  ModelStore(ModelCatalogue& catalogue, HubClient hub);
  ~ModelStore();
  ModelStore(const ModelStore&) = delete;
  ModelStore& operator=(const ModelStore&) = delete;

  const HubClient& hub() const { return hub_; }

  // Who hears of every pull's progress and end (the event stream). Set once
  // before the first download; called on the pull's thread.
  struct Observer {
    std::function<void(const std::string& model, const download::TaskProgress&)> on_progress;
    std::function<void(const std::string& model, const Status&)> on_end;
  };
  void set_observer(Observer observer) { observer_ = std::move(observer); }

  // Starts or joins the pull of a registered model. Errors known before any
  // transfer: kModelNotFound.
  Result<Download> download(std::string_view name);

  // Follows `d` to its end: its Status, or kCancelled when wait.cancelled()
  // turned true (the caller stops following).
  Status wait(Download& d, const DownloadWait& wait) const;

  // download() + wait() for a model that is not downloaded (auto-load). OK at
  // once when it is downloaded. kOffline when offline and not downloaded.
  Status ensure_downloaded(std::string_view name, const DownloadWait& wait);

  // True while a pull of `name` runs.
  bool downloading(std::string_view name) const;

  // Deletes the model's files as described above. kModelNotFound when
  // unknown; kModelFilesMissing when none of its files is on disk;
  // kUnsupportedOperation for models served from a local path or an extra
  // models dir (their files are the user's, never deleted).
  Status remove_files(std::string_view name);

  // Cancels every pull (their .incomplete files stay) and makes waits return
  // kShuttingDown. Idempotent; called when the router stops.
  void shutdown();
  // shutdown(), then waits for every pull thread: the observer is not called
  // after it returns. Idempotent; blocks for as long as cancelling takes.
  void stop();

 private:
  Status run_pull(const std::string& name, download::TaskContext& ctx);

  ModelCatalogue& catalogue_;
  const HubClient hub_;
  const std::filesystem::path hub_cache_;
  std::atomic<bool> shutting_down_{false};
  Observer observer_;
  download::SharedTasks tasks_;  // last: joined first on destruction
};

}  // namespace lemon
