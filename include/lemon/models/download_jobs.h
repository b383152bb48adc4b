// DownloadJobs: pulls the router owns, not a client (Lemonade 11's `pull`
// with "stream": true, "subscribe": false): started, listed with their
// progress (GET /api/v1/downloads) and paused, cancelled or removed (POST
// /api/v1/downloads/control). A job holds the pull's follower, so the pull
// goes on when the client goes away; pausing or cancelling lets go of it
// (the pull stops, its .incomplete files stay, so a later pull resumes
// where it stopped). Jobs are in memory: a restart forgets them. A job that
// ended stays listed for `keep_ended` (30 s), a paused, cancelled or failed
// one until it is removed or started again.
//
// Ownership: holds a reference to the store, which outlives it.
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/core/mutex.h"
#include "lemon/models/model_store.h"

namespace lemon {

class DownloadJobs {
 public:
  using Clock = std::chrono::steady_clock;

  explicit DownloadJobs(ModelStore& store, std::chrono::milliseconds keep_ended = kKeepEnded)
      : store_(store), keep_ended_(keep_ended) {}
  ~DownloadJobs();
  DownloadJobs(const DownloadJobs&) = delete;
  DownloadJobs& operator=(const DownloadJobs&) = delete;

  static constexpr std::chrono::milliseconds kKeepEnded{30'000};

  // Starts the pull of `model` as a job ("model:<name>"), or returns the one
  // that runs; a paused, cancelled or failed job of that model starts
  // again. The job's snapshot; kModelNotFound for an unknown model.
  Result<nlohmann::json> start(const std::string& model);
  // Every job still listed, oldest first.
  nlohmann::json list();
  // "pause", "cancel" or "remove" the job `id`: its snapshot after it, or
  // {"status": "ok"} for a removed one ({"status": "ok", "missing": true}
  // for an unknown id with "remove"). kModelNotFound (param "id") for an
  // unknown id otherwise; kInvalidRequest (param "action") for another
  // action.
  Result<nlohmann::json> control(const std::string& id, const std::string& action);

 private:
  struct Job {
    std::string id;
    std::string model;
    std::optional<ModelStore::Download> follower;  // none once paused or cancelled
    std::string status = "downloading";  // downloading, paused, cancelled, completed, error
    std::string error;
    download::TaskProgress progress;
    std::uint64_t seen_version = 0;
    std::optional<Clock::time_point> ended;
    std::uint64_t order = 0;
  };
  // Brings `job` up to date with its follower (progress, end).
  static void refresh(Job& job, Clock::time_point now);
  static nlohmann::json snapshot(const Job& job);
  void forget_old(Clock::time_point now) LEMON_REQUIRES(mu_);

  ModelStore& store_;
  const std::chrono::milliseconds keep_ended_;
  Mutex mu_;
  std::map<std::string, Job> jobs_ LEMON_GUARDED_BY(mu_);
  std::uint64_t next_order_ LEMON_GUARDED_BY(mu_) = 0;
};

}  // namespace lemon
