#include "lemon/backends/backend_report.h"

#include <algorithm>

#include "lemon/core/enum_names.h"

namespace lemon {
namespace {

std::optional<LoadProgress> parse_progress(const nlohmann::json& payload) {
  if (!payload.is_object()) {
    return std::nullopt;
  }
  LoadProgress p;
  if (auto stages = payload.find("stages"); stages != payload.end() && stages->is_array()) {
    for (const auto& s : *stages) {
      if (s.is_string()) {
        p.stages.push_back(s.get<std::string>());
      }
    }
  }
  // A stage's start may name it as "stage" (llama-server's mmproj start).
  for (const char* key : {"current", "stage"}) {
    if (auto c = payload.find(key); c != payload.end() && c->is_string()) {
      p.current = c->get<std::string>();
      break;
    }
  }
  if (auto v = payload.find("value"); v != payload.end() && v->is_number()) {
    p.value = std::clamp(v->get<double>(), 0.0, 1.0);
  }
  return p;
}

}  // namespace

namespace {

constexpr auto kBackendPhaseNames =
    std::to_array<EnumName<BackendReport::Phase>>({{BackendReport::Phase::kLoading, "loading"},
                                                   {BackendReport::Phase::kReady, "ready"},
                                                   {BackendReport::Phase::kSleeping, "sleeping"}});

}  // namespace

const char* backend_phase_name(BackendReport::Phase phase) {
  return name_of(kBackendPhaseNames, phase, "");
}

std::optional<BackendReport> parse_backend_report_line(std::string_view line) {
  if (!line.starts_with(kChildStatePrefix)) {
    return std::nullopt;
  }
  auto j = nlohmann::json::parse(line.substr(kChildStatePrefix.size()), nullptr, false);
  if (!j.is_object() || !j.contains("state") || !j["state"].is_string()) {
    return std::nullopt;
  }
  const std::string state = j["state"].get<std::string>();
  const nlohmann::json payload = j.value("payload", nlohmann::json());
  BackendReport out;
  if (state == "loading") {
    out.phase = BackendReport::Phase::kLoading;
    out.progress = parse_progress(payload);
  } else if (state == "ready") {
    out.phase = BackendReport::Phase::kReady;
    out.info = payload.is_object() ? payload : nlohmann::json();
  } else if (state == "sleeping") {
    out.phase = BackendReport::Phase::kSleeping;
  } else {
    return std::nullopt;  // "downloading" belongs to a download child, which we never start
  }
  return out;
}

nlohmann::json load_progress_json(const LoadProgress& p) {
  nlohmann::json j = {{"stages", p.stages}, {"current", p.current}};
  if (p.value) {
    j["value"] = *p.value;
  }
  return j;
}

void BackendReportBoard::set_listener(Listener listener) {
  MutexLock lock(mu_);
  listener_ = std::move(listener);
}

void BackendReportBoard::report(BackendReport state) {
  Listener listener;
  {
    MutexLock lock(mu_);
    state.woke = state.phase == BackendReport::Phase::kReady && latest_ &&
                 latest_->phase != BackendReport::Phase::kReady && ready_;
    if (state.phase == BackendReport::Phase::kReady) {
      ready_ = true;
    }
    latest_ = state;
    listener = listener_;
    cv_.notify_all();
  }
  if (listener) {
    listener(state);
  }
}

std::optional<BackendReport> BackendReportBoard::latest() const {
  MutexLock lock(mu_);
  return latest_;
}

bool BackendReportBoard::ready() const {
  MutexLock lock(mu_);
  return ready_;
}

bool BackendReportBoard::wait_ready(std::chrono::milliseconds timeout) const {
  MutexLock lock(mu_);
  return cv_.wait_for(lock, timeout, [&]() LEMON_REQUIRES(mu_) { return ready_; });
}

void BackendReportBoard::reset() {
  MutexLock lock(mu_);
  latest_.reset();
  ready_ = false;
}

}  // namespace lemon
