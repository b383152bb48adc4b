// RemoteModels: the models this router serves from other machines,
// with their endpoints' clients and health. Remote models hold no local
// slot or memory and never go through the Router: the inference gateway asks
// here for a model's endpoints, in the order its policy and their health
// give, and reports how each try went.
//
// Sources: user_models.json entries with "recipe": "remote" (through
// `find_model`, the catalogue), config.json's remote.models, and the models
// of the routers named in remote_discovery, listed as "<prefix>/<name>".
// declared() gives the last two to the catalogue, so every model list shows
// them.
//
// Endpoints are shared by every model that names the same one (same URL,
// key, timeouts): one health state and one connection pool each. The
// monitor thread checks them (GET <base>/health, or <base>/models where
// there is no /health; a lemonade-router's /metrics for its queue), every
// `health_interval` when usable and at their retry time when down, and
// refreshes discovery every `discovery_interval`. A key is read from its
// variable or file when the endpoint is made; an endpoint whose key cannot be
// read is down with that reason.
//
// Thread-safety: every method may be called from any thread. No lock is held
// while calling out (network, find_model, on_event).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/core/mutex.h"
#include "lemon/models/model_info.h"
#include "lemon/net/upstream_client.h"
#include "lemon/remote/endpoint_health.h"
#include "lemon/remote/remote_spec.h"

namespace lemon::remote {

// One remote server as requests and health checks use it.
class RemoteEndpoint {
 public:
  explicit RemoteEndpoint(RemoteEndpointSpec spec);
  const RemoteEndpointSpec& spec() const { return spec_; }
  // REQUIRES: ready() (a key that could not be read leaves no client).
  net::UpstreamCalls& client() { return *client_; }
  bool ready() const { return client_ != nullptr; }

  EndpointHealth health() const;
  EndpointLoad load() const;
  // A request's outcome; true when the endpoint changed state.
  bool succeeded();
  bool failed(std::string why, const BreakerPolicy& policy);

  // The remote refused this router's key (401/403) on a request: a health
  // check that passes (llama-server's /health needs no key) does not make
  // it healthy again; only a request that succeeds does.
  std::atomic<bool> key_refused{false};
  void set_remote_queue(std::optional<int> queue);

  // The endpoint's figures for /health.
  nlohmann::json to_json() const;

  // Counts one request in flight while it lives.
  class InFlight {
   public:
    explicit InFlight(RemoteEndpoint& e) : e_(&e) { e_->in_flight_.fetch_add(1); }
    ~InFlight() { release(); }
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;
    void release() {
      if (e_ != nullptr) {
        e_->in_flight_.fetch_sub(1);
        e_ = nullptr;
      }
    }

   private:
    RemoteEndpoint* e_;
  };

  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> failures{0};
  // The health checks' (RemoteModels::check_mu_): "health" or "models"
  // once it knows which answers, and whether it is a lemonade-router.
  std::string probe_path;
  bool is_lemonade = false;

 private:
  friend class InFlight;
  const RemoteEndpointSpec spec_;
  std::unique_ptr<net::UpstreamCalls> client_;
  std::atomic<int> in_flight_{0};
  mutable Mutex mu_;
  EndpointHealth health_ LEMON_GUARDED_BY(mu_);
  std::optional<int> remote_queue_ LEMON_GUARDED_BY(mu_);
};

// One remote model and its endpoints.
struct RemoteModel {
  RemoteModelSpec spec;
  std::vector<std::shared_ptr<RemoteEndpoint>> endpoints;
  std::string origin;  // "user_models.json", "config.json", "discovery"
  // Requests for this model in flight now (its endpoints may be shared).
  mutable std::atomic<int> in_flight{0};
  // The endpoints in the order a request tries them now.
  std::vector<std::size_t> order() const;
};

class RemoteModels {
 public:
  struct Hooks {
    // A model's catalogue entry by name (user_models.json's remote entries).
    std::function<std::optional<ModelInfo>(std::string_view)> find_model;
    // An event for /api/v1/events ("remote_endpoint": up or down).
    std::function<void(const std::string& type, nlohmann::json data)> on_event;
  };

  RemoteModels(RemoteSettings settings, Hooks hooks);
  ~RemoteModels();
  RemoteModels(const RemoteModels&) = delete;
  RemoteModels& operator=(const RemoteModels&) = delete;

  // Starts the monitor thread (health checks, discovery).
  void start();
  // A reloaded config.json's remote settings; endpoints that did not change
  // keep their health and connections.
  void reconfigure(RemoteSettings settings);

  // Cheap: whether `name` is a remote model this registry already knows.
  bool knows(std::string_view name) const;
  // The model, read from the catalogue if need be. kModelNotFound when
  // `name` is no remote model; kInvalidOption when its entry is wrong.
  Result<std::shared_ptr<const RemoteModel>> model(std::string_view name);

  // config.json's and discovered models as catalogue entries.
  std::vector<ModelInfo> declared() const;

  // /health's "remote_models": each known model with its endpoints.
  nlohmann::json to_json(const std::function<bool(const std::string&)>& shown) const;
  // Prometheus samples of the endpoints' state and requests.
  std::string metrics_text() const;

  // How a try on `endpoint` went, a request's or a health check's: it
  // answered, or it did not (`why`; `key_refused` for a 401 or 403). A
  // change of state is logged, becomes an event, and wakes the monitor (a
  // down endpoint is checked at its retry time).
  enum class Probe { kRequest, kHealthCheck };
  void report_success(RemoteEndpoint& endpoint, Probe by = Probe::kRequest);
  void report_failure(RemoteEndpoint& endpoint, std::string why, bool key_refused = false);

  // One round of health checks and discovery now (tests, and the monitor).
  void check_now();

 private:
  // A discovery source's last list, and its endpoint (kept, and checked,
  // even while it lists nothing).
  struct Discovered {
    DiscoverySpec source;
    std::shared_ptr<RemoteEndpoint> endpoint;
    std::vector<ModelInfo> infos;
  };

  // The endpoint for `spec`: the live one with the same identity, or a new
  // one (made, and its key read, without mu_ held).
  std::shared_ptr<RemoteEndpoint> endpoint_for(const RemoteEndpointSpec& spec) LEMON_EXCLUDES(mu_);
  std::shared_ptr<RemoteModel> make_model(RemoteModelSpec spec, std::string origin)
      LEMON_EXCLUDES(mu_);
  void check_endpoint(RemoteEndpoint& endpoint) LEMON_REQUIRES(check_mu_);
  void endpoint_changed(const RemoteEndpoint& endpoint) const;
  void discover(const DiscoverySpec& source) LEMON_REQUIRES(check_mu_);
  // Drops the models read from user_models.json that it no longer holds as
  // they were.
  void revalidate_user_models() LEMON_EXCLUDES(mu_);
  // When the monitor should look again: the next health round, the soonest
  // retry of a down endpoint, the next discovery.
  HealthClock::time_point next_round() const LEMON_EXCLUDES(mu_);
  void monitor_loop();
  void emit(const std::string& type, nlohmann::json data) const;

  const Hooks hooks_;
  mutable Mutex mu_;
  RemoteSettings settings_ LEMON_GUARDED_BY(mu_);
  // config.json's models as catalogue entries (made at reconfigure).
  std::vector<ModelInfo> declared_config_ LEMON_GUARDED_BY(mu_);
  // Every known model by name, and the endpoints by their spec's identity.
  std::map<std::string, std::shared_ptr<RemoteModel>, std::less<>> models_ LEMON_GUARDED_BY(mu_);
  std::map<std::string, std::weak_ptr<RemoteEndpoint>> endpoints_ LEMON_GUARDED_BY(mu_);
  // Discovered models by source prefix.
  std::map<std::string, Discovered> discovered_ LEMON_GUARDED_BY(mu_);
  std::atomic<bool> any_{false};
  // remote.retry_after: the first wait of the circuit breaker.
  std::atomic<std::int64_t> retry_after_ms_{1000};
  // Set by the destructor: a check under way gives up at once.
  std::atomic<bool> stopping_now_{false};
  HealthClock::time_point next_discovery_ LEMON_GUARDED_BY(mu_){};
  HealthClock::time_point next_health_ LEMON_GUARDED_BY(mu_){};
  // One round of checks at a time; RemoteEndpoint::probe_path and
  // is_lemonade are the rounds'.
  Mutex check_mu_;
  Mutex monitor_mu_;
  CondVar monitor_cv_;
  bool stopping_ LEMON_GUARDED_BY(monitor_mu_) = false;
  bool wake_ LEMON_GUARDED_BY(monitor_mu_) = false;  // a reconfigure: look again now
  std::thread monitor_;
};

}  // namespace lemon::remote
