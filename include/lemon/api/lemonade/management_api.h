// ManagementApi: Lemonade's model management routes: health,
// live, ready, stats, system-info, models and models/{id}, load (a model,
// or {"preset": id}), unload, internal/pin (also at the root, as Lemonade
// HEAD serves it), and Lemonade's debug route `test`; /live and /ready
// also at the root, where probes look. Loads go through the
// ModelProvisioner, so a registered model that is not on disk is downloaded
// (and its backend installed) first, as Lemonade does.
//
// Ownership: holds references to what it is given, which outlive it.
// Thread-safety: register_routes() once, before the server runs; handlers
// run on connection threads at once.
#pragma once

#include <functional>
#include <optional>
#include <string_view>

#include "lemon/api/lemonade/lemonade_settings.h"
#include "lemon/backends/backend_installer.h"
#include "lemon/http/api_routes.h"
#include "lemon/http/serving_status.h"
#include "lemon/inference/model_provisioner.h"
#include "lemon/inference/policy_routing.h"
#include "lemon/models/catalogue.h"
#include "lemon/models/preset_catalogue.h"
#include "lemon/net/server.h"
#include "lemon/remote/remote_models.h"
#include "lemon/router/router.h"
#include "lemon/telemetry/request_stats.h"

namespace lemon::api {

class ManagementApi {
 public:
  ManagementApi(ModelCatalogue& catalogue, const PresetCatalogue& presets,
                const BackendInstaller& installer, Router& router, const StatsStore& stats,
                inference::ModelProvisioner& provisioner, const http::ServingStatus& serving,
                const LemonadeSettings& settings);

  void register_routes(http::ApiRoutes& routes);
  // /health's "profile": the active profile's name, if any (ProfileApi).
  // /health's "remote_models". Set before serving.
  void show_remote(const remote::RemoteModels* remote) { remote_ = remote; }
  // /stats' routing counters (routing_decisions_total, routing_switches_total,
  // routing_policies). Set before serving.
  void show_routing(const inference::PolicyRouting* policies) { policies_ = policies; }
  void show_profile(std::function<std::optional<std::string>()> active) {
    active_profile_ = std::move(active);
  }
  // Adds fields to each entry of GET /models' list (another API's view of
  // the same models). Set before serving.
  void extend_models(std::function<void(nlohmann::json& entries)> extend) {
    extend_models_ = std::move(extend);
  }
  // /health's "is_streaming": the streams a model answers now
  // (InferenceGateway::open_streams). Set before serving.
  void show_streams(std::function<int(const std::string&)> open_streams) {
    open_streams_ = std::move(open_streams);
  }

 private:
  void handle_health(const net::Request& r, net::ResponseWriter& w);
  void handle_ready(net::ResponseWriter& w);
  void handle_stats(net::ResponseWriter& w);
  void handle_system_info(net::ResponseWriter& w);
  void handle_models(net::Request& r, net::ResponseWriter& w);
  // A /models entry's measured_ram and measured_vram: `live_ram` (its
  // servers' RSS now) while loaded, else its remembered footprint; null
  // when neither is known.
  void add_measured_memory(nlohmann::json& entry, const std::string& model,
                           std::int64_t live_ram) const;
  void handle_model(const net::Request& r, std::string_view id, net::ResponseWriter& w);
  void handle_load(net::Request& r, net::ResponseWriter& w);
  // POST /load {"preset": id}.
  void handle_load_preset(const nlohmann::json& body, net::ResponseWriter& w);
  // A collection's load (collection_load.cpp): a router loads nothing (its
  // candidates load per request), an omni loads every component.
  void load_collection(const ModelInfo& info, net::ResponseWriter& w);
  void handle_unload(net::Request& r, net::ResponseWriter& w);
  // POST /internal/pin {"model_name", "pinned"}.
  void handle_pin(net::Request& r, net::ResponseWriter& w);

  ModelCatalogue& catalogue_;
  const PresetCatalogue& presets_;
  const BackendInstaller& installer_;
  Router& router_;
  const StatsStore& stats_;
  inference::ModelProvisioner& provisioner_;
  const http::ServingStatus& serving_;
  const LemonadeSettings& settings_;
  std::function<std::optional<std::string>()> active_profile_;
  std::function<int(const std::string&)> open_streams_;
  const remote::RemoteModels* remote_ = nullptr;
  std::function<void(nlohmann::json&)> extend_models_;
  const inference::PolicyRouting* policies_ = nullptr;
};

}  // namespace lemon::api
