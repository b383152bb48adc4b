// LlamaCppApi's model management: the list, load and unload, downloads and
// deletes, and the list's reload.
#include <algorithm>
#include <ctime>
#include <map>

#include "lemon/api/llamacpp/llamacpp_api.h"
#include "lemon/core/log.h"
#include "lemon/http/caller.h"
#include "lemon/http/error_response.h"
#include "lemon/http/handler_support.h"
#include "lemon/http/json_request.h"
#include "lemon/models/hub_gguf.h"
#include "lemon/net/upstream_client.h"

namespace lemon::api {

namespace {

// How long POST /models/load waits for the router to take the load (queue
// it, or refuse it) before it answers.
constexpr std::chrono::milliseconds kLoadQueuedWait{5000};

const char* source_of(const ModelInfo& info) {
  switch (info.source) {
    case ModelSource::kExtraDir:
    case ModelSource::kUserLocalPath:
      return "models_dir";
    case ModelSource::kBuiltIn:
    case ModelSource::kUser:
    case ModelSource::kUserLocalUpload:
      return "cache";
  }
  return "cache";
}

void send_success(net::ResponseWriter& w) {
  send_json(w, 200, {{"success", true}});
}

Result<std::string> model_field(const net::Request& r) {
  auto body = parse_json_object(r.body);
  if (!body.ok()) {
    return std::move(body).error();
  }
  auto model = string_field(*body, "model", false);
  if (!model.ok()) {
    return std::move(model).error();
  }
  if (model->empty()) {
    return Error(ErrorCode::kInvalidRequest, "model must be a non-empty string", "model");
  }
  return model;
}

// The router's state of `server` in `view`.
ServedState served(const RouterView& view, const std::string& server) {
  ServedState s;
  for (const auto& v : view.servers) {
    if (v.info.model_name != server) {
      continue;
    }
    ++s.servers;
    const auto report = v.server().backend_report();
    if (report && report->phase == BackendReport::Phase::kSleeping) {
      ++s.sleeping_servers;
    }
  }
  s.loading = std::find(view.loading.begin(), view.loading.end(), server) != view.loading.end();
  return s;
}

}  // namespace

std::vector<LlamaModel> LlamaCppApi::list_models() const {
  std::vector<LlamaModel> out;
  std::map<std::string, std::size_t> by_id;
  std::map<std::string, std::size_t> by_main_file;
  auto add = [&](LlamaModel m) {
    if (auto it = by_id.find(m.id); it != by_id.end()) {
      out[it->second] = std::move(m);  // a preset file's section over the model it names
      return;
    }
    by_id[m.id] = out.size();
    out.push_back(std::move(m));
  };
  std::set<std::string> registered;
  for (const auto& info : catalogue_.registered()) {
    registered.insert(info.name);
  }
  for (const auto& info : catalogue_.list(false)) {
    if (info.recipe == "remote") {
      continue;  // served by other machines: our own /v1/models lists them
    }
    LlamaModel m;
    m.id = llamacpp_name_of(info);
    if (m.id != info.name && registered.contains(m.id)) {
      m.id = info.name;  // the short name is another model's
    }
    m.server = m.catalogue = info.name;
    m.source = source_of(info);
    m.can_remove = m.source == std::string("cache");
    m.vision = model_has_vision(info);
    if (m.id != info.name) {
      m.aliases.push_back(info.name);
    }
    if (std::string main = info.resolved_path("main"); !main.empty()) {
      by_main_file[main] = out.size();
    }
    add(std::move(m));
  }
  // The hub cache's GGUFs as llama.cpp names them: one a catalogue model
  // serves is that model's alias.
  for (const auto& hub : catalogue_.hub_models()) {
    auto info = catalogue_.resolve(hub.name);
    if (!info.ok() || !info->downloaded) {
      continue;
    }
    if (auto same = by_main_file.find(info->resolved_path("main")); same != by_main_file.end()) {
      auto& aliases = out[same->second].aliases;
      if (out[same->second].id != hub.name &&
          std::find(aliases.begin(), aliases.end(), hub.name) == aliases.end()) {
        aliases.push_back(hub.name);
      }
      continue;
    }
    LlamaModel m;
    m.id = m.server = m.catalogue = hub.name;
    m.source = "cache";
    m.can_remove = true;
    m.vision = model_has_vision(*info);
    add(std::move(m));
  }
  // Downloads under way (registered models, and hub models POST /models asked for).
  std::set<std::string> downloading;
  for (const auto& name : registered) {
    if (store_.downloading(name)) {
      downloading.insert(name);
    }
  }
  {
    MutexLock lock(threads_mu_);
    for (const auto& [name, cancel] : downloads_) {
      downloading.insert(name);
    }
  }
  for (const auto& name : downloading) {
    if (by_id.contains(name)) {
      out[by_id[name]].downloading = true;
      continue;
    }
    auto info = catalogue_.find(name);
    LlamaModel m;
    m.id = info ? llamacpp_name_of(*info) : name;
    m.server = m.catalogue = name;
    m.source = "cache";
    m.downloading = true;
    add(std::move(m));
  }
  // Presets: presets.json's as "preset.<id>" when their model is here, the
  // preset file's by their section names.
  std::set<std::string> hidden;
  for (const auto& e : presets_.list()) {
    LlamaModel m;
    m.server = e.server;
    m.catalogue = presets_.catalogue_name(e.server);
    if (m.catalogue == e.server) {
      m.catalogue.clear();
    }
    m.source = "preset";
    if (auto base = by_id.find(e.preset.model); base != by_id.end()) {
      m.vision = out[base->second].vision;
    }
    if (e.ini) {
      m.id = e.preset.id;
      m.aliases = e.ini->aliases;
      m.tags = e.ini->tags;
      m.preset_text = e.ini->text;
      if (e.ini->dedup_cache_models && e.preset.model != e.preset.id) {
        hidden.insert(canonical_hub_name(e.preset.model));
      }
    } else {
      const bool base_here = e.preset.model_kind() != PresetModelKind::kCatalogue ||
                             std::any_of(out.begin(), out.end(), [&e](const LlamaModel& x) {
                               return x.server == e.preset.model;
                             });
      if (!base_here) {
        continue;
      }
      m.id = std::string(kPresetPrefix) + e.preset.id;
    }
    add(std::move(m));
  }
  std::erase_if(out, [&hidden](const LlamaModel& m) {
    return m.source == std::string("cache") && hidden.contains(m.id);
  });
  return out;
}

std::vector<std::string> LlamaCppApi::args_of(const std::string& server,
                                              const RouterView& view) const {
  for (const auto& s : view.servers) {
    if (s.info.model_name == server) {
      return s.server().command_line();
    }
  }
  // Not running: the command line its next start would have (port 0).
  auto info = presets_.resolve(server);
  if (!info.ok()) {
    return {};
  }
  RecipeOptions options =
      info->saved_options.inherit(router_.cli_options()).restricted_to(info->recipe);
  auto made = factory_.create(*info, options);
  if (!made.ok() || !(*made)->prepare().ok()) {
    return {};
  }
  return (*made)->command_line();
}

nlohmann::ordered_json LlamaCppApi::model_json(const LlamaModel& m, const RouterView& view) const {
  ServedState state = served(view, m.server);
  state.downloading = m.downloading || (!m.catalogue.empty() && store_.downloading(m.catalogue));
  const ModelActivity::Of activity = activity_.of(m.server);
  StatusDetail detail;
  detail.status = llama_status(state);
  detail.args = args_of(m.server, view);
  detail.preset = m.preset_text;
  detail.failed_exit = activity.failed_exit;
  detail.load = activity.progress;
  detail.downloads = activity_.downloads(m.catalogue.empty() ? m.server : m.catalogue);
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array({"text"});
  if (m.vision) {
    inputs.push_back("image");
  }
  nlohmann::ordered_json j = {
      {"id", m.id},
      {"aliases", m.aliases},
      {"tags", m.tags},
      {"object", "model"},
      {"owned_by", "llamacpp"},
      {"created", static_cast<std::int64_t>(std::time(nullptr))},
      {"status", status_json(detail)},
      {"architecture", {{"input_modalities", inputs}, {"output_modalities", {"text"}}}},
      {"source", m.source},
      {"can_remove", m.can_remove}};
  if (detail.status == LlamaStatus::kLoaded || detail.status == LlamaStatus::kSleeping) {
    // What its backend's /v1/models says of it (its "meta": n_ctx_train,
    // ...): from its ready report, or asked of a backend that sends none.
    nlohmann::json info = activity.info;
    if (!info.is_object()) {
      for (const auto& s : view.servers) {
        if (s.info.model_name != m.server) {
          continue;
        }
        net::UpstreamRequest get;
        get.method = "GET";
        get.path = "/v1/models";
        net::CallOptions options;
        options.total_timeout = std::chrono::milliseconds(1000);
        if (auto answer = s.server().client().send(get, options);
            answer.ok() && answer->status == 200) {
          auto body = nlohmann::json::parse(answer->body, nullptr, false);
          if (body.is_object() && body.contains("data") && body["data"].is_array() &&
              !body["data"].empty()) {
            info = body["data"][0];
          }
        }
        break;
      }
    }
    if (info.is_object()) {
      for (const auto& [key, value] : info.items()) {
        if (!j.contains(key)) {
          j[key] = value;
        }
      }
    }
  }
  return j;
}

void LlamaCppApi::handle_models(net::Request& r, net::ResponseWriter& w) {
  if (auto reload = r.query_param("reload"); reload && !reload->empty()) {
    // The model sources again: the preset file, and every running model's
    // files; one whose source changed or vanished is unloaded.
    if (wrote_error(w, presets_.reload_file())) {
      return;
    }
    const auto view = router_.view();
    std::set<std::string> stale;
    for (const auto& s : view->servers) {
      auto info = presets_.resolve(s.info.model_name);
      const bool changed = !info.ok() || !info->downloaded ||
                           info->resolved_path("main") != s.server().model().resolved_path("main");
      if (changed) {
        stale.insert(s.info.model_name);
      }
    }
    for (const auto& name : stale) {
      logger("http")->info("reload: '{}' changed or vanished; unloading it", name);
      if (Status unloaded = router_.unload(name);
          !unloaded.ok() && unloaded.error().code() != ErrorCode::kModelNotLoaded) {
        write_error(w, unloaded.error());
        return;
      }
    }
    activity_.clear_failures();
    hub_.events().publish("models_reload", {{"model", "*"}});
  }
  const http::ApiKey* key = http::caller_key(r);
  const auto view = router_.view();
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  for (const auto& m : list_models()) {
    if (key != nullptr && !key->allows_model(m.server) && !key->allows_model(m.id)) {
      continue;
    }
    data.push_back(model_json(m, *view));
  }
  nlohmann::ordered_json body = {{"data", std::move(data)}, {"object", "list"}};
  w.send(200, http::json_headers(), body.dump());
}

void LlamaCppApi::handle_load(net::Request& r, net::ResponseWriter& w) {
  auto name = model_field(r);
  if (wrote_error(w, name)) {
    return;
  }
  if (auto refused = gateway_.refuse_model(http::caller_key(r), *name)) {
    write_error(w, *refused);
    return;
  }
  auto target = target_of(*name);
  if (!target) {
    write_error(w, provisioner_.model_not_found(*name));
    return;
  }
  const ServedState state = served(*router_.view(), target->server);
  if (state.servers > 0 || state.loading) {
    // llama.cpp's answer to a model already running.
    write_error(
        w, Error(ErrorCode::kInvalidRequest,
                 "model '" + *name + "' is already " + (state.servers > 0 ? "loaded" : "loading"),
                 "model"));
    return;
  }
  // The load runs on; the answer comes once the router has taken it (or
  // refused it before queueing: unknown files, a rest after failures).
  struct Outcome {
    std::atomic<bool> done{false};
    Status result;
  };
  auto outcome = std::make_shared<Outcome>();
  const std::uint64_t seen = activity_.load_events(target->server);
  in_background([this, outcome, server = target->server] {
    WaitHooks hooks;
    hooks.cancelled = [this] { return stopping_.load(); };
    outcome->result = provisioner_.load(server, RecipeOptions{}, hooks);
    outcome->done = true;
    activity_.notify();
  });
  activity_.wait_for_load_event(
      target->server, seen, [&outcome] { return outcome->done.load(); }, kLoadQueuedWait);
  if (outcome->done && !outcome->result.ok()) {
    write_error(w, outcome->result.error());
    return;
  }
  send_success(w);
}

void LlamaCppApi::handle_unload(net::Request& r, net::ResponseWriter& w) {
  auto name = model_field(r);
  if (wrote_error(w, name)) {
    return;
  }
  auto target = target_of(*name);
  if (!target) {
    write_error(w, provisioner_.model_not_found(*name));
    return;
  }
  // A download POST /models started: cancelled, and the answer waits for it.
  {
    MutexLock lock(threads_mu_);
    if (auto it = downloads_.find(target->catalogue); it != downloads_.end()) {
      *it->second = true;
      download_ended_.wait(lock, [&]() LEMON_REQUIRES(threads_mu_) {
        return !downloads_.contains(target->catalogue);
      });
      lock.unlock();
      send_success(w);
      return;
    }
  }
  const ServedState state = served(*router_.view(), target->server);
  if (state.servers == 0 && !state.loading) {
    write_error(w,
                Error(ErrorCode::kModelNotLoaded, "model '" + *name + "' is not running", "model"));
    return;
  }
  // Its servers drain, then stop (a loading one once its load ends); the
  // status turns unloaded then.
  in_background([this, server = target->server] {
    for (;;) {
      const std::uint64_t seen = activity_.load_events(server);
      Status unloaded = router_.unload(server);
      if (unloaded.ok() || stopping_) {
        return;
      }
      const ServedState now = served(*router_.view(), server);
      if (!now.loading) {
        return;
      }
      activity_.wait_for_load_event(
          server, seen, [this] { return stopping_.load(); }, std::chrono::seconds(1));
    }
  });
  send_success(w);
}

void LlamaCppApi::follow_download(const std::string& model, ModelStore::Download started) {
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  {
    MutexLock lock(threads_mu_);
    downloads_[model] = cancel;
  }
  auto d = std::make_shared<ModelStore::Download>(std::move(started));
  in_background([this, model, cancel, d] {
    DownloadWait wait;
    wait.cancelled = [cancel] { return cancel->load(); };
    Status result = store_.wait(*d, wait);
    if (!result.ok() && result.error().code() != ErrorCode::kCancelled) {
      logger("http")->warn("download of '{}': {}", model, result.error().message());
    }
    MutexLock lock(threads_mu_);
    downloads_.erase(model);
    download_ended_.notify_all();
  });
}

void LlamaCppApi::handle_download(net::Request& r, net::ResponseWriter& w) {
  auto name = model_field(r);
  if (wrote_error(w, name)) {
    return;
  }
  auto canonical = catalogue_.admit_hub_model(*name);
  if (wrote_error(w, canonical)) {
    return;
  }
  if (auto info = catalogue_.resolve(*canonical); info.ok() && info->downloaded) {
    write_error(
        w, Error(ErrorCode::kInvalidRequest, "model '" + *canonical + "' already exists", "model"));
    return;
  }
  // Started here (a bad repository fails now), then followed to its end.
  auto started = store_.download(*canonical);
  if (wrote_error(w, started)) {
    return;
  }
  follow_download(*canonical, std::move(*started));
  send_success(w);
}

void LlamaCppApi::handle_delete(net::Request& r, net::ResponseWriter& w) {
  const std::string name = r.query_param("model").value_or("");
  if (name.empty()) {
    write_error(w, Error(ErrorCode::kInvalidRequest, "model must be a non-empty string", "model"));
    return;
  }
  auto target = target_of(name);
  if (!target) {
    write_error(w, provisioner_.model_not_found(name));
    return;
  }
  if (target->catalogue.empty() || target->catalogue != target->server) {
    write_error(w, Error(ErrorCode::kUnsupportedOperation,
                         "model '" + name + "' is a preset: it has no files of its own to delete",
                         "model"));
    return;
  }
  if (wrote_error(w, provisioner_.remove(target->catalogue))) {
    return;
  }
  hub_.events().publish("model_removed", {{"model", target->server}, {"id", name}});
  send_success(w);
}

void LlamaCppApi::annotate_models(nlohmann::json& entries) {
  const auto view = router_.view();
  for (auto& entry : entries) {
    if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_string()) {
      continue;
    }
    // The entry's id is the public one ("a" for "user.a"); the router
    // knows the model by its internal name.
    auto info = catalogue_.find(entry["id"].get<std::string>());
    if (!info) {
      continue;
    }
    const std::string& name = info->name;
    LlamaModel m;
    m.id = llamacpp_name_of(*info);
    m.server = m.catalogue = name;
    m.source = source_of(*info);
    m.can_remove = m.source == std::string("cache") && info->recipe != "remote";
    m.vision = model_has_vision(*info);
    m.downloading = store_.downloading(name);
    ServedState state = served(*view, name);
    state.downloading = m.downloading;
    const ModelActivity::Of activity = activity_.of(name);
    StatusDetail detail;
    detail.status = llama_status(state);
    detail.args = args_of(name, *view);
    detail.failed_exit = activity.failed_exit;
    detail.load = activity.progress;
    detail.downloads = activity_.downloads(name);
    entry["aliases"] = m.id != name ? nlohmann::json::array({m.id}) : nlohmann::json::array();
    entry["tags"] = nlohmann::json::array();
    entry["status"] = nlohmann::json(status_json(detail));
    nlohmann::json inputs = nlohmann::json::array({"text"});
    if (m.vision) {
      inputs.push_back("image");
    }
    entry["architecture"] = {{"input_modalities", inputs}, {"output_modalities", {"text"}}};
    entry["source"] = m.source;
    entry["can_remove"] = m.can_remove;
  }
}

}  // namespace lemon::api
