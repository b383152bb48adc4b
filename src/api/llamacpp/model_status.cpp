#include "lemon/api/llamacpp/model_status.h"

namespace lemon::api {

const char* llama_status_name(LlamaStatus status) {
  switch (status) {
    case LlamaStatus::kUnloaded:
      return "unloaded";
    case LlamaStatus::kLoading:
      return "loading";
    case LlamaStatus::kLoaded:
      return "loaded";
    case LlamaStatus::kSleeping:
      return "sleeping";
    case LlamaStatus::kDownloading:
      return "downloading";
    case LlamaStatus::kDownloaded:
      return "downloaded";
  }
  return "unloaded";
}

LlamaStatus llama_status(const ServedState& state) {
  if (state.servers > 0) {
    return state.sleeping_servers == state.servers ? LlamaStatus::kSleeping : LlamaStatus::kLoaded;
  }
  if (state.loading) {
    return LlamaStatus::kLoading;
  }
  if (state.downloading) {
    return LlamaStatus::kDownloading;
  }
  return LlamaStatus::kUnloaded;
}

nlohmann::ordered_json status_json(const StatusDetail& d) {
  nlohmann::ordered_json j = {{"value", llama_status_name(d.status)}, {"args", d.args}};
  if (!d.preset.empty()) {
    j["preset"] = d.preset;
  }
  if (d.status == LlamaStatus::kUnloaded && d.failed_exit) {
    j["exit_code"] = *d.failed_exit;
    j["failed"] = true;
  }
  if (d.status == LlamaStatus::kLoading && d.load) {
    j["progress"] = nlohmann::ordered_json(load_progress_json(*d.load));
  } else if (d.status == LlamaStatus::kDownloading && !d.downloads.is_null()) {
    j["progress"] = d.downloads;
  }
  return j;
}

}  // namespace lemon::api
