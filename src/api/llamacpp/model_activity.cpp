#include "lemon/api/llamacpp/model_activity.h"

namespace lemon::api {

namespace {

// llama.cpp reports a failed child by its exit code; the router's load
// failures and crashes carry an error code instead, so they read as 1, the
// status llama-server exits with when a load fails.
constexpr int kFailedExitCode = 1;

}  // namespace

void ModelActivity::on_router_event(const RouterEvent& e) {
  MutexLock lock(mu_);
  switch (e.kind) {
    case RouterEvent::Kind::kLoadQueued:
    case RouterEvent::Kind::kLoadJoined:
      ++models_[e.model].load_events;
      break;
    default:
      break;
  }
  switch (e.kind) {
    case RouterEvent::Kind::kLoadStarted: {
      Of& m = models_[e.model];
      ++m.load_events;
      m.progress.reset();
      m.failed_exit.reset();
      break;
    }
    case RouterEvent::Kind::kBackendReport: {
      Of& m = models_[e.model];
      if (e.report.phase == BackendReport::Phase::kLoading && e.report.progress) {
        m.progress = e.report.progress;
      } else if (e.report.phase == BackendReport::Phase::kReady && e.report.info.is_object()) {
        m.info = e.report.info;
      }
      break;
    }
    case RouterEvent::Kind::kLoadSucceeded: {
      Of& m = models_[e.model];
      ++m.load_events;
      m.progress.reset();
      m.failed_exit.reset();
      break;
    }
    case RouterEvent::Kind::kLoadFailed:
    case RouterEvent::Kind::kServerCrashed: {
      Of& m = models_[e.model];
      m.load_events += e.kind == RouterEvent::Kind::kLoadFailed ? 1 : 0;
      m.progress.reset();
      m.info = nullptr;
      m.failed_exit = kFailedExitCode;
      break;
    }
    case RouterEvent::Kind::kServerStopped:
      models_[e.model].info = nullptr;
      break;
    default:
      break;
  }
  changed_.notify_all();
}

std::uint64_t ModelActivity::load_events(const std::string& server) const {
  MutexLock lock(mu_);
  auto it = models_.find(server);
  return it == models_.end() ? 0 : it->second.load_events;
}

bool ModelActivity::wait_for_load_event(const std::string& server, std::uint64_t seen,
                                        const std::function<bool()>& done,
                                        std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  return changed_.wait_for(lock, timeout, [&]() LEMON_REQUIRES(mu_) {
    auto it = models_.find(server);
    return (it != models_.end() && it->second.load_events > seen) || done();
  });
}

void ModelActivity::notify() {
  MutexLock lock(mu_);
  changed_.notify_all();
}

void ModelActivity::on_download_progress(const std::string& model, const std::string& file,
                                         std::uint64_t bytes, std::uint64_t total) {
  MutexLock lock(mu_);
  downloads_[model][file] = {{"done", bytes}, {"total", total}};
}

void ModelActivity::on_download_end(const std::string& model) {
  MutexLock lock(mu_);
  downloads_.erase(model);
}

ModelActivity::Of ModelActivity::of(const std::string& server) const {
  MutexLock lock(mu_);
  auto it = models_.find(server);
  return it == models_.end() ? Of{} : it->second;
}

nlohmann::ordered_json ModelActivity::downloads(const std::string& model) const {
  MutexLock lock(mu_);
  auto it = downloads_.find(model);
  return it == downloads_.end() ? nlohmann::ordered_json() : it->second;
}

void ModelActivity::clear_failures() {
  MutexLock lock(mu_);
  for (auto& [name, m] : models_) {
    m.failed_exit.reset();
  }
}

}  // namespace lemon::api
