#include "support/fake_server_factory.h"

#include <algorithm>
#include <cstdlib>

namespace lemon::testing {

ModelInfo fake_model(const std::string& name, const std::string& recipe,
                     std::vector<std::string> labels, bool downloaded) {
  ModelInfo m;
  m.name = name;
  m.recipe = recipe;
  m.checkpoints["main"] = "fake/" + name + ":Q4";
  m.labels = std::move(labels);
  m.type = model_type_from_labels(m.labels);
  m.downloaded = downloaded;
  if (downloaded) {
    m.resolved_paths["main"] = "/fake/" + name + ".gguf";
  } else {
    m.missing_paths.push_back("/fake/" + name + ".gguf");
  }
  return m;
}

void FakeResolver::add(ModelInfo info) {
  std::lock_guard lock(mu_);
  std::string name = info.name;
  models_[name] = std::move(info);
}

std::optional<std::string> FakeResolver::internal_name(std::string_view name) const {
  (void)name;
  ++name_lookups_;
  return std::nullopt;
}

Result<ModelInfo> FakeResolver::resolve(std::string_view name) const {
  std::lock_guard lock(mu_);
  auto it = models_.find(name);
  if (it == models_.end()) {
    return Error(ErrorCode::kModelNotFound, "unknown model " + std::string(name), "model");
  }
  return it->second;
}

void Gate::open() {
  {
    std::lock_guard lock(mu_);
    open_ = true;
  }
  cv_.notify_all();
}

void Gate::wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return open_; });
}

FakeServer::FakeServer(FakeServerFactory& factory, ModelInfo model, RecipeOptions options)
    : WrappedServer(model, options,
                    device_for_recipe(model.recipe, backend_for(model.recipe, options))),
      factory_(factory),
      slots_(factory.slots(model.name)),
      queued_ahead_(factory.queued_ahead(model.name)) {}

Status FakeServer::prepare() {
  if (auto e = factory_.prepare_error(model_name())) {
    return Error(*e, "scripted prepare failure for " + model_name());
  }
  if (!model().downloaded) {
    return Error(ErrorCode::kModelFilesMissing, "missing " + model_name());
  }
  return ok_status();
}

Status FakeServer::start(const std::function<bool()>& cancelled) {
  std::shared_ptr<Gate> gate;
  Status outcome = factory_.next_start(model_name(), gate);
  factory_.record("start:" + model_name());
  if (gate) {
    gate->wait();
  }
  if (cancelled && cancelled()) {
    return Error(ErrorCode::kCancelled, "cancelled");
  }
  if (!outcome.ok()) {
    return outcome;
  }
  {
    std::lock_guard lock(mu_);
    running_ = true;
  }
  return ok_status();
}

void FakeServer::stop() {
  bool was_running = false;
  {
    std::lock_guard lock(mu_);
    was_running = running_;
    running_ = false;
  }
  if (was_running) {
    factory_.record("stop:" + model_name());
  }
}

bool FakeServer::exited() const {
  std::lock_guard lock(mu_);
  return !running_;
}

net::UpstreamClient& FakeServer::client() {
  std::abort();
}

std::optional<std::string> FakeServer::upstream_path(ApiRoute route) const {
  return std::string("/fake/") + api_route_name(route);
}

void FakeServer::crash() {
  {
    std::lock_guard lock(mu_);
    running_ = false;
  }
  factory_.record("crash:" + model_name());
  notify_unexpected_exit();
}

Result<std::shared_ptr<WrappedServer>> FakeServerFactory::create(const ModelInfo& model,
                                                                 const RecipeOptions& options) {
  if (model.recipe == "unknown-recipe") {
    return Error(ErrorCode::kUnknownRecipe, "no server for " + model.recipe);
  }
  auto server = std::make_shared<FakeServer>(*this, model, options);
  set_live(model.name, server);
  return std::shared_ptr<WrappedServer>(server);
}

void FakeServerFactory::script(const std::string& model, Script s) {
  std::lock_guard lock(mu_);
  scripts_[model] = std::move(s);
}

std::shared_ptr<Gate> FakeServerFactory::gate(const std::string& model) {
  std::lock_guard lock(mu_);
  auto g = std::make_shared<Gate>();
  scripts_[model].gate = g;
  return g;
}

std::vector<std::string> FakeServerFactory::log() const {
  std::lock_guard lock(mu_);
  return log_;
}

int FakeServerFactory::count(const std::string& entry) const {
  std::lock_guard lock(mu_);
  return static_cast<int>(std::count(log_.begin(), log_.end(), entry));
}

std::shared_ptr<FakeServer> FakeServerFactory::live(const std::string& model) const {
  std::lock_guard lock(mu_);
  auto it = live_.find(model);
  return it == live_.end() ? nullptr : it->second.lock();
}

void FakeServerFactory::wait_for(const std::string& entry, int times) const {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return std::count(log_.begin(), log_.end(), entry) >= times; });
}

void FakeServerFactory::record(const std::string& entry) {
  {
    std::lock_guard lock(mu_);
    log_.push_back(entry);
  }
  cv_.notify_all();
}

Status FakeServerFactory::next_start(const std::string& model, std::shared_ptr<Gate>& gate) {
  std::lock_guard lock(mu_);
  auto it = scripts_.find(model);
  if (it == scripts_.end()) {
    return ok_status();
  }
  gate = std::exchange(it->second.gate, nullptr);
  if (it->second.fail_starts > 0) {
    --it->second.fail_starts;
    return Error(it->second.fail_code, "scripted start failure for " + model);
  }
  return ok_status();
}

int FakeServerFactory::slots(const std::string& model) const {
  std::lock_guard lock(mu_);
  auto it = scripts_.find(model);
  return it == scripts_.end() ? 0 : it->second.slots;
}

int FakeServerFactory::queued_ahead(const std::string& model) const {
  std::lock_guard lock(mu_);
  auto it = scripts_.find(model);
  return it == scripts_.end() ? 0 : it->second.queued_ahead;
}

std::optional<ErrorCode> FakeServerFactory::prepare_error(const std::string& model) const {
  std::lock_guard lock(mu_);
  auto it = scripts_.find(model);
  return it == scripts_.end() ? std::nullopt : it->second.prepare_error;
}

void FakeServerFactory::set_live(const std::string& model, std::shared_ptr<FakeServer> server) {
  std::lock_guard lock(mu_);
  live_[model] = server;
}

std::function<void(const RouterEvent&)> EventLog::sink() {
  return [this](const RouterEvent& e) {
    {
      std::lock_guard lock(mu_);
      events_.push_back(e);
    }
    cv_.notify_all();
  };
}

int EventLog::count(RouterEvent::Kind kind, const std::string& model) const {
  std::lock_guard lock(mu_);
  return static_cast<int>(std::count_if(events_.begin(), events_.end(), [&](const auto& e) {
    return e.kind == kind && e.model == model;
  }));
}

void EventLog::wait_for(RouterEvent::Kind kind, const std::string& model, int times) const {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] {
    return std::count_if(events_.begin(), events_.end(), [&](const auto& e) {
             return e.kind == kind && e.model == model;
           }) >= times;
  });
}

std::vector<std::string> EventLog::names() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& e : events_) {
    out.push_back(std::string(router_event_name(e.kind)) + ":" + e.model);
  }
  return out;
}

}  // namespace lemon::testing
