// LlamaCppApi: llama-server's router API (llama.cpp's tools/server/README.md,
// "Using multiple models"; tools/server/server-models.cpp), so clients
// written for llama.cpp's multi-model mode drive our models unchanged:
//
//   GET  /health                  {"status":"ok"} (503 while draining)
//   GET  /models                  every model we serve, in llama.cpp's shape
//                                 (?reload=1 reads the model sources again)
//   POST /models                  {"model":"org/repo:TAG"}: download it
//   DELETE /models?model=         delete a downloaded model
//   POST /models/load, /unload    {"model"}: queue a load; unload (or cancel
//                                 a download)
//   GET  /models/sse              llama.cpp's model events
//   GET  /props[?model=]          the router's props, or the model's backend's
//   GET  /slots?model=            the model's backend's /slots (read only)
//   POST /completion(s), /chat/completions, /infill, /embedding(s),
//        /rerank, /reranking, /tokenize, /detokenize, /apply-template
//                                 the model named in the body, through the
//                                 inference gateway
//
// Names are llama.cpp's: a user model without "user.", a --models-dir file's
// stem or folder, "org/repo:TAG" of the hub cache, a preset file's section
// (or alias); and ours. Loads, unloads and inference go through the router's
// own queue and policies. Errors use the router's envelope.
//
// Ownership: holds references to what it is given, which outlive it.
// Thread-safety: register_routes() once before the server runs; the rest
// may be called from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/api/llamacpp/model_activity.h"
#include "lemon/api/llamacpp/model_status.h"
#include "lemon/backends/server_factory.h"
#include "lemon/core/mutex.h"
#include "lemon/http/api_routes.h"
#include "lemon/http/serving_status.h"
#include "lemon/inference/inference_gateway.h"
#include "lemon/inference/model_provisioner.h"
#include "lemon/models/catalogue.h"
#include "lemon/models/model_store.h"
#include "lemon/models/preset_catalogue.h"
#include "lemon/router/router.h"
#include "lemon/telemetry/telemetry_hub.h"

namespace lemon::api {

// One model as llama.cpp's clients see it.
struct LlamaModel {
  std::string id;         // the name llama.cpp's clients use
  std::string server;     // the router's name for its servers
  std::string catalogue;  // what downloads and deletes name ("" for a preset)
  std::string source;     // "cache", "models_dir" or "preset"
  bool can_remove = false;
  std::vector<std::string> aliases;
  std::vector<std::string> tags;
  bool vision = false;
  std::string preset_text;  // llama.cpp's rendering of its preset; "" : none
  bool downloading = false;
};

// llama.cpp's name for a catalogue entry: "user.X" is "X", "extra.X.gguf"
// is "X", "extra.D" is "D"; other names are themselves.
std::string llamacpp_name_of(const ModelInfo& info);

class LlamaCppApi {
 public:
  LlamaCppApi(ModelCatalogue& catalogue, PresetCatalogue& presets, ModelStore& store,
              Router& router, ServerFactory& factory, inference::ModelProvisioner& provisioner,
              inference::InferenceGateway& gateway, telemetry::TelemetryHub& hub,
              const http::ServingStatus& serving);
  ~LlamaCppApi();
  LlamaCppApi(const LlamaCppApi&) = delete;
  LlamaCppApi& operator=(const LlamaCppApi&) = delete;

  void register_routes(http::ApiRoutes& routes);

  // What the router and the model store report (wired by main).
  void on_router_event(const RouterEvent& event) { activity_.on_router_event(event); }
  void on_download_progress(const std::string& model, const std::string& file, std::uint64_t bytes,
                            std::uint64_t total) {
    activity_.on_download_progress(model, file, bytes, total);
  }
  void on_download_end(const std::string& model) { activity_.on_download_end(model); }

  // GET /v1/models keeps its OpenAI shape; each entry (named by our name)
  // gains llama.cpp's fields: aliases, tags, status, architecture, source,
  // can_remove.
  void annotate_models(nlohmann::json& entries);
  // GET /metrics?model=X: our metrics of that model (true), or false when
  // the request names no model (the router's whole /metrics answers).
  bool serve_model_metrics(net::Request& r, net::ResponseWriter& w);
  // Loads the preset file's load-on-startup presets, one after another, on
  // a thread of its own (joined by the destructor).
  void start_startup_loads();

 private:
  // Where a name leads: the router's server name, the catalogue name
  // behind it, and whether anything knows it.
  struct Target {
    std::string server;
    std::string catalogue;
  };
  std::optional<Target> target_of(const std::string& name) const;
  std::vector<LlamaModel> list_models() const;
  nlohmann::ordered_json model_json(const LlamaModel& m, const RouterView& view) const;
  std::vector<std::string> args_of(const std::string& server, const RouterView& view) const;
  std::string id_of_server(const std::string& server) const;

  void handle_health(net::ResponseWriter& w);
  void handle_models(net::Request& r, net::ResponseWriter& w);
  void handle_load(net::Request& r, net::ResponseWriter& w);
  void handle_unload(net::Request& r, net::ResponseWriter& w);
  void handle_download(net::Request& r, net::ResponseWriter& w);
  void handle_delete(net::Request& r, net::ResponseWriter& w);
  void handle_sse(net::Request& r, net::ResponseWriter& w);
  void handle_props(net::Request& r, net::ResponseWriter& w);
  void handle_slots(net::Request& r, net::ResponseWriter& w);
  // A GET of the model's backend (its /props, /slots), loading it first
  // unless autoload is off.
  void backend_get(net::Request& r, net::ResponseWriter& w, const std::string& path);
  void handle_inference(ApiRoute route, const std::string& native_path, net::Request& r,
                        net::ResponseWriter& w);
  // Follows `started`, the pull of `model`, to its end on a thread of its
  // own (the same follower, so the pull is never left without one).
  void follow_download(const std::string& model, ModelStore::Download started);

  ModelCatalogue& catalogue_;
  PresetCatalogue& presets_;
  ModelStore& store_;
  Router& router_;
  ServerFactory& factory_;
  inference::ModelProvisioner& provisioner_;
  inference::InferenceGateway& gateway_;
  telemetry::TelemetryHub& hub_;
  const http::ServingStatus& serving_;
  ModelActivity activity_;

  // Runs `work` on a thread of its own, joined by the destructor.
  void in_background(std::function<void()> work);

  // Background work (downloads followed, loads, unloads): joined at the end.
  mutable Mutex threads_mu_;
  CondVar download_ended_;
  std::vector<std::thread> threads_ LEMON_GUARDED_BY(threads_mu_);
  // The downloads POST /models started, by model: set to cancel one.
  std::map<std::string, std::shared_ptr<std::atomic<bool>>> downloads_
      LEMON_GUARDED_BY(threads_mu_);
  std::atomic<bool> stopping_{false};
};

}  // namespace lemon::api
