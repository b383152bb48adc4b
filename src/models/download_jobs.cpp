#include "lemon/models/download_jobs.h"

#include <algorithm>

namespace lemon {

namespace {

constexpr std::string_view kModelJob = "model:";

}  // namespace

DownloadJobs::~DownloadJobs() = default;

void DownloadJobs::refresh(Job& job, Clock::time_point now) {
  if (!job.follower) {
    return;
  }
  auto [progress, version] = job.follower->wait_progress(job.seen_version, {});
  if (version != job.seen_version) {
    job.progress = std::move(progress);
    job.seen_version = version;
  }
  if (auto result = job.follower->result()) {
    job.status = result->ok() ? "completed" : "error";
    job.error = result->ok() ? std::string() : result->error().message();
    if (result->ok()) {
      job.progress.bytes_done = job.progress.bytes_total;
    }
    job.ended = now;
    job.follower.reset();
  }
}

nlohmann::json DownloadJobs::snapshot(const Job& job) {
  const auto& p = job.progress;
  const int percent =
      job.status == "completed"
          ? 100
          : (p.bytes_total > 0 ? static_cast<int>(p.bytes_done * 100 / p.bytes_total) : 0);
  nlohmann::json out = {{"id", job.id},
                        {"type", "model"},
                        {"model_name", job.model},
                        {"status", job.status},
                        {"running", job.follower.has_value()},
                        {"file", p.file},
                        {"file_index", p.total_files > 0 ? p.file_index + 1 : 0},
                        {"total_files", p.total_files},
                        {"bytes_downloaded", p.file_bytes_done},
                        {"bytes_total", p.file_bytes_total},
                        {"total_download_size", p.bytes_total},
                        {"cumulative_bytes_downloaded", p.bytes_done},
                        {"overall_bytes_downloaded", p.bytes_done},
                        {"percent", percent},
                        {"complete", job.status == "completed"}};
  if (!job.error.empty()) {
    out["error"] = job.error;
  }
  return out;
}

void DownloadJobs::forget_old(Clock::time_point now) {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    const Job& job = it->second;
    const bool expired = job.status == "completed" && job.ended && now - *job.ended >= keep_ended_;
    it = expired ? jobs_.erase(it) : std::next(it);
  }
}

Result<nlohmann::json> DownloadJobs::start(const std::string& model) {
  const std::string id = std::string(kModelJob) + model;
  {
    MutexLock lock(mu_);
    auto it = jobs_.find(id);
    if (it != jobs_.end()) {
      refresh(it->second, Clock::now());
      if (it->second.follower) {
        return snapshot(it->second);  // already running: the same job
      }
    }
  }
  auto follower = store_.download(model);  // not under mu_: it may read the disk
  if (!follower.ok()) {
    return std::move(follower).error();
  }
  MutexLock lock(mu_);
  Job& job = jobs_[id];
  job = Job{};
  job.id = id;
  job.model = model;
  job.follower.emplace(std::move(follower).value());
  job.order = next_order_++;
  refresh(job, Clock::now());
  return snapshot(job);
}

nlohmann::json DownloadJobs::list() {
  MutexLock lock(mu_);
  const auto now = Clock::now();
  for (auto& [id, job] : jobs_) {
    refresh(job, now);
  }
  forget_old(now);
  std::vector<const Job*> ordered;
  for (const auto& [id, job] : jobs_) {
    ordered.push_back(&job);
  }
  std::sort(ordered.begin(), ordered.end(),
            [](const Job* a, const Job* b) { return a->order < b->order; });
  nlohmann::json out = nlohmann::json::array();
  for (const Job* job : ordered) {
    out.push_back(snapshot(*job));
  }
  return out;
}

Result<nlohmann::json> DownloadJobs::control(const std::string& id, const std::string& action) {
  if (action != "pause" && action != "cancel" && action != "remove") {
    return Error(ErrorCode::kInvalidRequest,
                 "'action' must be \"pause\", \"cancel\" or \"remove\"; got '" + action + "'",
                 "action");
  }
  std::optional<ModelStore::Download> released;  // let go of outside mu_
  MutexLock lock(mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) {
    if (action == "remove") {
      return nlohmann::json{{"status", "ok"}, {"missing", true}};
    }
    return Error(ErrorCode::kModelNotFound, "no download '" + id + "'", "id");
  }
  Job& job = it->second;
  refresh(job, Clock::now());
  if (action == "remove") {
    released = std::move(job.follower);
    jobs_.erase(it);
    lock.unlock();
    return nlohmann::json{{"status", "ok"}};
  }
  if (job.follower) {
    released = std::move(job.follower);
    job.follower.reset();
    job.status = action == "pause" ? "paused" : "cancelled";
  }
  nlohmann::json out = snapshot(job);
  lock.unlock();
  return out;
}

}  // namespace lemon
