#include "lemon/remote/remote_models.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "lemon/core/log.h"
#include "lemon/download/curl_upstream.h"
#include "lemon/models/registry_entry.h"
#include "remote_detail.h"

namespace lemon::remote {
namespace {

std::string without_brackets(const std::string& host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    return host.substr(1, host.size() - 2);
  }
  return host;
}

// The endpoint's key from its variable or file; nullopt (and `why`) when it
// names one that cannot be read.
std::optional<std::string> read_key(const RemoteEndpointSpec& spec, std::string& why) {
  if (!spec.api_key_env.empty()) {
    const char* value = std::getenv(spec.api_key_env.c_str());
    if (value == nullptr || *value == '\0') {
      why = "its key variable " + spec.api_key_env + " is not set";
      return std::nullopt;
    }
    return std::string(value);
  }
  if (!spec.api_key_file.empty()) {
    std::ifstream in(spec.api_key_file);
    std::string key;
    if (!in || !std::getline(in, key)) {
      why = "its key file " + spec.api_key_file + " cannot be read";
      return std::nullopt;
    }
    while (!key.empty() && (key.back() == '\r' || key.back() == ' ' || key.back() == '\t')) {
      key.pop_back();
    }
    if (key.empty()) {
      why = "its key file " + spec.api_key_file + " is empty";
      return std::nullopt;
    }
    return key;
  }
  return std::string();
}

// Everything that makes two endpoints the same one.
std::string identity(const RemoteEndpointSpec& s) {
  return s.base_url + "\n" + s.api_key_env + "\n" + s.api_key_file + "\n" + s.ca_file + "\n" +
         std::to_string(s.connect_timeout.count()) + "\n" +
         std::to_string(s.request_timeout.count()) + (s.allow_insecure_http ? "\ni" : "\n");
}

std::string label_text(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
    }
    out += c == '\n' ? ' ' : c;
  }
  return out;
}

}  // namespace

namespace detail {

// The value of a Prometheus sample without labels, `name value`, in `text`.
std::optional<int> gauge_in(std::string_view text, std::string_view name) {
  std::size_t at = 0;
  while ((at = text.find(name, at)) != std::string_view::npos) {
    const bool line_start = at == 0 || text[at - 1] == '\n';
    const std::size_t after = at + name.size();
    if (line_start && after < text.size() && text[after] == ' ') {
      const double value = std::strtod(std::string(text.substr(after + 1, 24)).c_str(), nullptr);
      if (!std::isfinite(value) || value < 0.0) {
        return std::nullopt;  // another machine's text: nothing is trusted
      }
      return static_cast<int>(std::min(value, 1e6));
    }
    at = after;
  }
  return std::nullopt;
}

ModelInfo catalogue_entry(const std::string& name, const nlohmann::json& entry,
                          const std::string& origin) {
  nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(entry.dump());
  ordered.erase("name");
  ordered["recipe"] = "remote";
  auto info = parse_registry_entry(name, ordered, ModelSource::kUser);
  ModelInfo out = info.ok() ? std::move(info).value() : ModelInfo{};
  out.name = name;
  out.recipe = "remote";
  out.downloaded = true;
  if (out.checkpoints.empty() && entry.contains("checkpoint") && entry["checkpoint"].is_string()) {
    out.checkpoints["main"] = entry["checkpoint"].get<std::string>();
  }
  if (!out.remote.is_object()) {
    out.remote = nlohmann::json::object();
  }
  out.remote["origin"] = origin;  // not user_models.json's: RemoteModels made it
  return out;
}

}  // namespace detail

using detail::catalogue_entry;

RemoteEndpoint::RemoteEndpoint(RemoteEndpointSpec spec) : spec_(std::move(spec)) {
  std::string why;
  auto key = read_key(spec_, why);
  if (!key) {
    MutexLock lock(mu_);
    health_.state = EndpointState::kDown;
    health_.last_error = why;
    health_.retry_at = HealthClock::time_point::max();
    logger("remote")->warn("remote endpoint {} is not used: {}", spec_.base_url, why);
    return;
  }
  if (spec_.url.tls()) {
    client_ = std::make_unique<download::CurlUpstreamClient>(
        download::CurlUpstreamSettings{spec_.url.origin(), *key, spec_.ca_file});
  } else {
    client_ = std::make_unique<net::UpstreamClient>(without_brackets(spec_.url.host),
                                                    spec_.url.port, 16, *key);
  }
}

EndpointHealth RemoteEndpoint::health() const {
  MutexLock lock(mu_);
  return health_;
}

EndpointLoad RemoteEndpoint::load() const {
  MutexLock lock(mu_);
  return {in_flight_.load(), remote_queue_};
}

bool RemoteEndpoint::succeeded() {
  if (!ready()) {
    return false;
  }
  MutexLock lock(mu_);
  return record_success(health_);
}

bool RemoteEndpoint::failed(std::string why, const BreakerPolicy& policy) {
  failures.fetch_add(1);
  if (!ready()) {
    return false;
  }
  MutexLock lock(mu_);
  return record_failure(health_, std::move(why), HealthClock::now(), policy);
}

void RemoteEndpoint::set_remote_queue(std::optional<int> queue) {
  MutexLock lock(mu_);
  remote_queue_ = queue;
}

nlohmann::json RemoteEndpoint::to_json() const {
  const EndpointHealth h = health();
  const EndpointLoad l = load();
  nlohmann::json j = {{"base_url", spec_.base_url},
                      {"state", endpoint_state_name(h.state)},
                      {"in_flight", l.in_flight},
                      {"requests", requests.load()},
                      {"failures", failures.load()},
                      {"last_error", h.last_error.empty() ? nlohmann::json(nullptr)
                                                          : nlohmann::json(h.last_error)}};
  if (h.state == EndpointState::kDown && h.retry_at != HealthClock::time_point::max()) {
    j["retry_in_ms"] = std::max<long long>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(h.retry_at - HealthClock::now())
               .count());
  }
  if (l.remote_queue) {
    j["remote_queue"] = *l.remote_queue;
  }
  return j;
}

std::vector<std::size_t> RemoteModel::order() const {
  std::vector<EndpointHealth> health;
  std::vector<EndpointLoad> load;
  for (const auto& e : endpoints) {
    health.push_back(e->health());
    load.push_back(e->load());
  }
  auto out = endpoint_order(spec.policy, health, load, HealthClock::now());
  std::erase_if(out, [this](std::size_t i) { return !endpoints[i]->ready(); });
  return out;
}

RemoteModels::RemoteModels(RemoteSettings settings, Hooks hooks) : hooks_(std::move(hooks)) {
  reconfigure(std::move(settings));
}

RemoteModels::~RemoteModels() {
  stopping_now_.store(true);
  {
    MutexLock lock(monitor_mu_);
    stopping_ = true;
  }
  monitor_cv_.notify_all();
  if (monitor_.joinable()) {
    monitor_.join();
  }
}

void RemoteModels::start() {
  monitor_ = std::thread([this] { monitor_loop(); });
}

std::shared_ptr<RemoteEndpoint> RemoteModels::endpoint_for(const RemoteEndpointSpec& spec) {
  const std::string id = identity(spec);
  {
    MutexLock lock(mu_);
    if (auto it = endpoints_.find(id); it != endpoints_.end()) {
      if (auto live = it->second.lock()) {
        return live;
      }
    }
  }
  auto made = std::make_shared<RemoteEndpoint>(spec);  // reads its key: no lock held
  MutexLock lock(mu_);
  auto& slot = endpoints_[id];
  if (auto other = slot.lock()) {
    return other;  // made meanwhile by another thread: one endpoint, one health
  }
  slot = made;
  std::erase_if(endpoints_, [](const auto& e) { return e.second.expired(); });
  return made;
}

std::shared_ptr<RemoteModel> RemoteModels::make_model(RemoteModelSpec spec, std::string origin) {
  auto model = std::make_shared<RemoteModel>();
  for (const auto& e : spec.endpoints) {
    model->endpoints.push_back(endpoint_for(e));
  }
  model->spec = std::move(spec);
  model->origin = std::move(origin);
  return model;
}

void RemoteModels::reconfigure(RemoteSettings settings) {
  std::map<std::string, std::shared_ptr<RemoteModel>> kept;
  {
    MutexLock lock(mu_);
    for (const auto& [name, model] : models_) {
      if (model->origin == "config.json") {
        kept[name] = model;
      }
    }
  }
  // The new config models, made without the lock (they may read key files).
  std::map<std::string, std::shared_ptr<RemoteModel>> config_models;
  for (const auto& spec : settings.models) {
    auto it = kept.find(spec.name);
    config_models[spec.name] =
        it != kept.end() && it->second->spec == spec ? it->second : make_model(spec, "config.json");
  }
  std::vector<ModelInfo> declared;
  for (const auto& entry : settings.model_entries) {
    declared.push_back(catalogue_entry(entry.value("name", std::string()), entry, "config.json"));
  }
  {
    MutexLock lock(mu_);
    std::erase_if(models_, [](const auto& e) { return e.second->origin == "config.json"; });
    for (auto& [name, model] : config_models) {
      models_[name] = std::move(model);
    }
    declared_config_ = std::move(declared);
    // A discovery source that changed in any way goes, with its models; the
    // next round reads the new one at once.
    const bool sources_changed = settings.discovery != settings_.discovery;
    std::erase_if(discovered_, [&settings](const auto& entry) {
      return std::find(settings.discovery.begin(), settings.discovery.end(), entry.second.source) ==
             settings.discovery.end();
    });
    std::erase_if(models_, [this](const auto& entry) LEMON_REQUIRES(mu_) {
      if (entry.second->origin != "discovery") {
        return false;
      }
      return std::none_of(discovered_.begin(), discovered_.end(), [&entry](const auto& d) {
        return entry.first.starts_with(d.first + "/");
      });
    });
    if (sources_changed) {
      next_discovery_ = {};
    }
    next_health_ = {};
    retry_after_ms_.store(settings.retry_after.count());
    settings_ = std::move(settings);
    any_.store(!models_.empty() || !settings_.discovery.empty());
  }
  {
    MutexLock lock(monitor_mu_);
    wake_ = true;
  }
  monitor_cv_.notify_all();
}

bool RemoteModels::knows(std::string_view name) const {
  if (!any_.load(std::memory_order_relaxed)) {
    return false;
  }
  MutexLock lock(mu_);
  return models_.find(name) != models_.end();
}

Result<std::shared_ptr<const RemoteModel>> RemoteModels::model(std::string_view name) {
  {
    MutexLock lock(mu_);
    // A user_models.json entry is read again every time (the catalogue
    // re-reads the file only when it changed): an edit or a delete takes
    // effect at the next request.
    if (auto it = models_.find(name);
        it != models_.end() && it->second->origin != "user_models.json") {
      return std::shared_ptr<const RemoteModel>(it->second);
    }
  }
  const std::string key(name);
  auto info = hooks_.find_model ? hooks_.find_model(name) : std::nullopt;
  // Only user_models.json's entries are read here: config.json's and the
  // discovered ones are made by reconfigure() and discover(), with their keys.
  const bool from_user_models = info && info->recipe == "remote" && info->remote.is_object() &&
                                !info->remote.contains("origin");
  if (!from_user_models) {
    MutexLock lock(mu_);
    if (auto it = models_.find(name);
        it != models_.end() && it->second->origin == "user_models.json") {
      models_.erase(it);  // no longer in user_models.json
    }
    return Error(ErrorCode::kModelNotFound, "model '" + key + "' is not a remote model", "model");
  }
  const std::string file_key = key.starts_with("user.") ? key.substr(5) : key;
  auto spec = parse_remote_model(info->name, info->checkpoint(), info->remote,
                                 "user_models.json: '" + file_key + "'");
  if (!spec.ok()) {
    return Error(ErrorCode::kInvalidOption, spec.error().message(), "model");
  }
  std::shared_ptr<RemoteModel> current;
  {
    MutexLock lock(mu_);
    if (auto it = models_.find(name); it != models_.end() && it->second->spec == *spec) {
      return std::shared_ptr<const RemoteModel>(it->second);
    }
  }
  auto made = make_model(std::move(spec).value(), "user_models.json");
  MutexLock lock(mu_);
  models_[key] = made;
  any_.store(true);
  return std::shared_ptr<const RemoteModel>(made);
}

void RemoteModels::revalidate_user_models() {
  std::vector<std::pair<std::string, std::shared_ptr<RemoteModel>>> user;
  {
    MutexLock lock(mu_);
    for (const auto& [name, model] : models_) {
      if (model->origin == "user_models.json") {
        user.emplace_back(name, model);
      }
    }
  }
  for (const auto& [name, model] : user) {
    auto info = hooks_.find_model ? hooks_.find_model(name) : std::nullopt;
    bool same = info && info->recipe == "remote" && info->remote.is_object();
    if (same) {
      auto spec = parse_remote_model(info->name, info->checkpoint(), info->remote, name);
      same = spec.ok() && *spec == model->spec;
    }
    if (!same) {
      MutexLock lock(mu_);
      if (auto it = models_.find(name); it != models_.end() && it->second == model) {
        models_.erase(it);  // the next request reads the file again
      }
    }
  }
}

std::vector<ModelInfo> RemoteModels::declared() const {
  MutexLock lock(mu_);
  std::vector<ModelInfo> out = declared_config_;
  for (const auto& [prefix, d] : discovered_) {
    out.insert(out.end(), d.infos.begin(), d.infos.end());
  }
  return out;
}

nlohmann::json RemoteModels::to_json(const std::function<bool(const std::string&)>& shown) const {
  std::vector<std::shared_ptr<RemoteModel>> models;
  {
    MutexLock lock(mu_);
    for (const auto& [name, model] : models_) {
      models.push_back(model);
    }
  }
  std::erase_if(models, [&shown](const auto& m) { return shown && !shown(m->spec.name); });
  nlohmann::json out = nlohmann::json::array();
  for (const auto& m : models) {
    nlohmann::json endpoints = nlohmann::json::array();
    bool any_up = false;
    for (const auto& e : m->endpoints) {
      endpoints.push_back(e->to_json());
      any_up = any_up || (e->ready() && e->health().state != EndpointState::kDown);
    }
    out.push_back({{"model_name", m->spec.name},
                   {"checkpoint", m->spec.checkpoint},
                   {"recipe", "remote"},
                   {"policy", remote_policy_name(m->spec.policy)},
                   {"origin", m->origin},
                   {"state", any_up ? "ready" : "unavailable"},
                   {"in_flight", m->in_flight.load()},
                   {"endpoints", std::move(endpoints)}});
  }
  return out;
}

std::string RemoteModels::metrics_text() const {
  std::vector<std::shared_ptr<RemoteEndpoint>> live;
  {
    MutexLock lock(mu_);
    for (const auto& [id, weak] : endpoints_) {
      if (auto e = weak.lock()) {
        live.push_back(std::move(e));
      }
    }
  }
  if (live.empty()) {
    return {};
  }
  std::ostringstream text;
  text << "# HELP lemonade_remote_endpoint_up Whether a remote endpoint is usable (1) or down "
          "(0)\n# TYPE lemonade_remote_endpoint_up gauge\n";
  for (const auto& e : live) {
    text << "lemonade_remote_endpoint_up{endpoint=\"" << label_text(e->spec().base_url) << "\"} "
         << (e->ready() && e->health().state != EndpointState::kDown ? 1 : 0) << "\n";
  }
  text << "# HELP lemonade_remote_requests_total Requests sent to a remote endpoint\n"
          "# TYPE lemonade_remote_requests_total counter\n";
  for (const auto& e : live) {
    text << "lemonade_remote_requests_total{endpoint=\"" << label_text(e->spec().base_url) << "\"} "
         << e->requests.load() << "\n";
  }
  text << "# HELP lemonade_remote_failures_total Requests and health checks a remote endpoint "
          "did not answer\n# TYPE lemonade_remote_failures_total counter\n";
  for (const auto& e : live) {
    text << "lemonade_remote_failures_total{endpoint=\"" << label_text(e->spec().base_url) << "\"} "
         << e->failures.load() << "\n";
  }
  return text.str();
}

void RemoteModels::emit(const std::string& type, nlohmann::json data) const {
  if (hooks_.on_event) {
    hooks_.on_event(type, std::move(data));
  }
}

}  // namespace lemon::remote
