#include "lemon/app/config_reloader.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "lemon/core/atomic_file.h"
#include "lemon/core/clock.h"
#include "lemon/core/log.h"
#include "lemon/http/error_response.h"
#include "lemon/http/json_request.h"
#include "lemon/options/config_file.h"
#include "lemon/options/lemonade11_config.h"
#include "lemon/options/router_settings.h"

namespace lemon {
namespace {

// The settings a reload applies (their rows say so).
const std::set<std::string>& live_settings() {
  static const std::set<std::string> live = [] {
    std::set<std::string> keys;
    for (const Setting& s : router_settings()) {
      if (s.live) {
        keys.insert(s.key);
      }
    }
    return keys;
  }();
  return live;
}

// A setting's value as GET /internal/config shows it: keys never, and the
// `auth` section without its hashes.
std::string shown_value(const std::string& key, const std::string& value) {
  if ((key == "api_key" || key == "admin_api_key") && !value.empty()) {
    return "(set)";
  }
  if (key == "auth") {
    auto auth = nlohmann::json::parse(value, nullptr, false);
    if (auth.is_object() && auth.contains("keys") && auth["keys"].is_array()) {
      for (auto& k : auth["keys"]) {
        if (k.is_object() && k.contains("key_sha256")) {
          k["key_sha256"] = "(set)";
        }
      }
    }
    return auth.is_discarded() ? std::string() : auth.dump();
  }
  return value;
}

// A change of config.json in its folder: the file itself, or "..data", the
// link a Kubernetes ConfigMap volume swaps (rename(2) of a new link over it)
// to point config.json at a new version.
bool is_config_entry(std::string_view name) {
  return name == "config.json" || name == "..data";
}

// The whole text of `file`, "" when it cannot be read.
std::string file_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

bool applies_live(const std::string& key) {
  return live_settings().contains(key);
}

ConfigChanges classify_config_changes(const std::map<std::string, std::string>& running,
                                      const std::map<std::string, std::string>& read,
                                      const std::set<std::string>& live) {
  ConfigChanges out;
  for (const auto& [key, value] : read) {
    auto was = running.find(key);
    if (was != running.end() && was->second == value) {
      continue;
    }
    // The memory budget's size changes live; turning it on or off starts or
    // stops the device readings, which only a restart does.
    const bool switched = key == "memory_budget" && was != running.end() &&
                          (was->second == "off") != (value == "off");
    (live.contains(key) && !switched ? out.applied : out.pending).push_back(key);
  }
  for (const auto& [key, value] : running) {
    if (!read.contains(key)) {
      (live.contains(key) ? out.applied : out.pending).push_back(key);
    }
  }
  return out;
}

ParsedConfig ConfigReloader::parse_with_unsaved() {
  std::vector<nlohmann::json> unsaved;
  std::filesystem::path file;
  {
    MutexLock lock(mu_);
    file = running_.config_file;
    if (!unsaved_.empty() && file_text(file) != unsaved_over_) {
      logger("app")->warn("{} changed: the settings POST /internal/set could not save are dropped",
                          file.string());
      unsaved_.clear();
    }
    unsaved = unsaved_;
  }
  if (unsaved.empty()) {
    return parse_config(argv_);
  }
  auto current = read_json_object_for_update(file);
  if (!current.ok()) {
    return parse_config(argv_);  // says what is wrong with the file
  }
  for (const auto& changes : unsaved) {
    merge_config_changes(*current, changes);
  }
  return parse_config(argv_, nlohmann::json::parse(current->dump()));
}

ConfigReloader::ConfigReloader(std::vector<std::string> argv, const SettingsProvenance& running,
                               telemetry::EventBus& events, LiveTargets targets)
    : argv_(std::move(argv)),
      events_(events),
      targets_(std::move(targets)),
      running_(running),
      read_(running) {}

void ConfigReloader::apply(const DaemonOptions& read, const std::set<LivePart>& parts) const {
  for (LivePart part : parts) {
    switch (part) {
      case LivePart::kLogLevel:
        set_log_level(read.app.log_level);
        break;
      case LivePart::kRouter:
        if (targets_.router) {
          targets_.router(read.router);
        }
        break;
      case LivePart::kHttp:
        if (targets_.http) {
          targets_.http(read.http);
        }
        break;
      case LivePart::kForward:
        if (targets_.forward) {
          targets_.forward(read.forward);
        }
        break;
      case LivePart::kRemote:
        if (targets_.remote) {
          targets_.remote(read.remote);
        }
        break;
      case LivePart::kProfiles:
        if (targets_.profiles) {
          targets_.profiles(read.profiles);
        }
        break;
      case LivePart::kCatalogue:
        if (targets_.catalogue) {
          targets_.catalogue(read.catalogue);
        }
        break;
    }
  }
}

ConfigReloader::~ConfigReloader() {
  if (watcher_.joinable()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(stop_fd_, &one, sizeof one);
    watcher_.join();
  }
  if (stop_fd_ >= 0) {
    ::close(stop_fd_);
  }
}

nlohmann::json ConfigReloader::reload() {
  // One reload at a time, from reading to applying: a slower one must not
  // apply an older file after a newer one (the watcher, SIGHUP and
  // /internal/set each reload on their own thread).
  MutexLock one_at_a_time(reload_mu_);
  ParsedConfig parsed = parse_with_unsaved();
  auto log = logger("app");
  nlohmann::json event;
  std::set<LivePart> parts;
  {
    MutexLock lock(mu_);
    ++reloads_;
    last_reload_ms_ = unix_ms_now();
    if (parsed.exit_now) {
      last_error_ = parsed.message;
      event = {{"ok", false}, {"error", last_error_}};
    } else {
      last_error_.clear();
      read_ = parsed.provenance;
      const ConfigChanges changes =
          classify_config_changes(running_.values, read_.values, live_settings());
      parts = live_parts_of(changes.applied);
      for (const auto& key : changes.applied) {
        running_.values[key] = read_.values[key];
        running_.sources[key] = read_.sources[key];
      }
      pending_ = changes.pending;
      event = {{"ok", true}, {"applied", changes.applied}, {"pending", changes.pending}};
    }
  }
  apply(parsed.options, parts);  // without mu_: the layers take their own locks
  if (event["ok"] == false) {
    log->error("configuration not reloaded, the running one stays: {}",
               event["error"].get<std::string>());
  } else {
    log->info("configuration reloaded: {} applied, {} pending a restart ({})",
              event["applied"].size(), event["pending"].size(), event["pending"].dump());
  }
  events_.publish("config_reloaded", event);
  return event;
}

Result<nlohmann::json> ConfigReloader::set(const nlohmann::json& changes) {
  if (!changes.is_object() || changes.empty()) {
    return Error(ErrorCode::kInvalidRequest,
                 "the body must be a non-empty JSON object of settings");
  }
  MutexLock lock(set_mu_);
  std::filesystem::path file;
  std::map<std::string, std::string> before;
  {
    MutexLock state(mu_);
    file = running_.config_file;
    before = running_.values;
  }
  auto current = read_json_object_for_update(file);
  if (!current.ok()) {
    return std::move(current).error();  // a file the user broke is never overwritten
  }
  std::vector<nlohmann::json> unsaved;
  {
    MutexLock state(mu_);
    unsaved = unsaved_;
  }
  nlohmann::ordered_json merged = *current;
  for (const auto& earlier : unsaved) {
    merge_config_changes(merged, earlier);
  }
  merge_config_changes(merged, changes);
  // Checked as a whole, as the next start would read it.
  ParsedConfig checked = parse_config(argv_, nlohmann::json::parse(merged.dump()));
  if (checked.exit_now) {
    return Error(ErrorCode::kInvalidRequest, checked.message, checked.param);
  }
  if (Status written = write_file_atomically(file, merged.dump(2) + "\n"); !written.ok()) {
    if (written.error().code() != ErrorCode::kStorageReadOnly) {
      return std::move(written).error();
    }
    // A read-only folder: this run takes the change, the file keeps its own.
    {
      MutexLock state(mu_);
      if (unsaved_.empty()) {
        unsaved_over_ = file_text(file);
      }
      unsaved_.push_back(changes);
    }
    reload();
    return Error(ErrorCode::kConfigNotSaved,
                 "applied to this run only: " + written.error().message() +
                     "; the change is lost when the router restarts");
  }
  // What this change does (the watcher may reload before we do).
  const ConfigChanges done =
      classify_config_changes(before, checked.provenance.values, live_settings());
  reload();
  // Lemonade's echo of what changed, without the keys.
  nlohmann::json updated = changes;
  for (auto& [key, value] : updated.items()) {
    if ((key == "api_key" || key == "admin_api_key") && !value.is_null()) {
      value = "(set)";
    } else if (key == "auth") {
      value = nlohmann::json::parse(shown_value(key, value.dump()), nullptr, false);
    }
  }
  nlohmann::json answer = {{"status", "success"}, {"updated", std::move(updated)}};
  answer["applied"] = done.applied;
  answer["pending"] = done.pending;
  // What a variable or a flag still overrides: written, but not in force.
  nlohmann::json overridden = nlohmann::json::array();
  for (const auto& [key, from] : checked.provenance.sources) {
    const std::size_t dot = key.find('.');
    const bool named = dot == std::string::npos
                           ? changes.contains(key)
                           : changes.contains(key.substr(0, dot)) &&
                                 changes[key.substr(0, dot)].is_object() &&
                                 changes[key.substr(0, dot)].contains(key.substr(dot + 1));
    if ((from == "environment" || from == "flag") && named) {
      overridden.push_back(key);
    }
  }
  answer["overridden"] = std::move(overridden);
  return answer;
}

void ConfigReloader::start_watching() {
  std::filesystem::path dir;
  {
    MutexLock lock(mu_);
    dir = std::filesystem::path(running_.config_file).parent_path();
  }
  const int fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0) {
    return;
  }
  if (::inotify_add_watch(fd, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE) < 0) {
    logger("app")->debug("not watching {} (it does not exist); SIGHUP reloads", dir.string());
    ::close(fd);
    return;
  }
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (stop_fd_ < 0) {
    ::close(fd);
    return;
  }
  watcher_ = std::thread([this, fd] {
    std::array<char, 4096> buf{};
    for (;;) {
      std::array<pollfd, 2> fds{pollfd{fd, POLLIN, 0}, pollfd{stop_fd_, POLLIN, 0}};
      if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
        break;
      }
      if ((fds[1].revents & POLLIN) != 0) {
        break;
      }
      bool ours = false;
      for (ssize_t n = ::read(fd, buf.data(), buf.size()); n > 0;
           n = ::read(fd, buf.data(), buf.size())) {
        for (ssize_t at = 0; at < n;) {
          const auto* e = reinterpret_cast<const inotify_event*>(buf.data() + at);
          ours = ours || (e->len > 0 && is_config_entry(e->name));
          at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
        }
      }
      if (ours) {
        logger("app")->info("config.json changed: reading the configuration again");
        reload();
      }
    }
    ::close(fd);
  });
}

nlohmann::json ConfigReloader::snapshot() const {
  MutexLock lock(mu_);
  nlohmann::json settings = nlohmann::json::object();
  for (const auto& [key, value] : running_.values) {
    auto source = running_.sources.find(key);
    settings[key] = {{"value", shown_value(key, value)},
                     {"source", source != running_.sources.end() ? source->second : "default"}};
  }
  nlohmann::json pending = nlohmann::json::object();
  for (const auto& key : pending_) {
    auto value = read_.values.find(key);
    const std::string text = value != read_.values.end() ? value->second : "";
    pending[key] = shown_value(key, text);
  }
  return {
      {"config_file", running_.config_file},
      {"ignored_config_file", running_.ignored_config_file.empty()
                                  ? nlohmann::json(nullptr)
                                  : nlohmann::json(running_.ignored_config_file)},
      {"not_applied", running_.not_applied},
      {"settings", std::move(settings)},
      {"pending_restart", std::move(pending)},
      {"reloads", reloads_},
      {"last_reload", last_reload_ms_ > 0
                          ? nlohmann::json(static_cast<double>(last_reload_ms_) / 1000.0)
                          : nlohmann::json(nullptr)},
      {"last_error", last_error_.empty() ? nlohmann::json(nullptr) : nlohmann::json(last_error_)}};
}

nlohmann::json ConfigReloader::raw_config() const {
  std::map<std::string, std::string> shown;
  std::string file;
  {
    MutexLock lock(mu_);
    for (const auto& [key, value] : running_.values) {
      shown[key] = shown_value(key, value);
    }
    file = running_.config_file;
  }
  nlohmann::json out = settings_as_config(shown);
  auto on_disk = read_config_file(file);
  if (!on_disk.ok()) {
    return out;
  }
  // The file's keys that are no setting here (Lemonade 11's accepted ones).
  for (const auto& [key, value] : on_disk->items()) {
    if (!out.contains(key)) {
      out[key] = value;
    } else if (out[key].is_object() && value.is_object() && key != "auth") {
      for (const auto& [inner, inner_value] : value.items()) {
        if (!out[key].contains(inner)) {
          out[key][inner] = inner_value;
        }
      }
    }
  }
  return out;
}

void ConfigReloader::register_routes(http::ApiRoutes& routes) {
  const auto show = [this](net::Request& r, net::ResponseWriter& w, std::string_view) {
    const auto sources = r.query_param("sources");
    const bool with_sources = sources && *sources != "0" && *sources != "false";
    http::send_json(w, 200, with_sources ? snapshot() : raw_config());
  };
  const auto defaults = [](net::Request&, net::ResponseWriter& w, std::string_view) {
    http::send_json(w, 200, default_settings_as_config());
  };
  routes.route("GET", "internal/config/defaults", http::RouteAccess::kRead, http::Scope::kAdmin,
               defaults);
  routes.root("GET", "/internal/config/defaults", http::RouteAccess::kRead, http::Scope::kAdmin,
              defaults);
  routes.route("GET", "internal/config", http::RouteAccess::kRead, http::Scope::kAdmin, show);
  routes.root("GET", "/internal/config", http::RouteAccess::kRead, http::Scope::kAdmin, show);
  const auto change = [this](net::Request& r, net::ResponseWriter& w, std::string_view) {
    auto body = http::parse_json_object(r.body);
    if (!body.ok()) {
      http::write_error(w, body.error());
      return;
    }
    auto answer = set(*body);
    if (!answer.ok()) {
      http::write_error(w, answer.error());
      return;
    }
    http::send_json(w, 200, *answer);
  };
  routes.route("POST", "internal/set", http::RouteAccess::kJsonPost, http::Scope::kAdmin, change);
  routes.root("POST", "/internal/set", http::RouteAccess::kJsonPost, http::Scope::kAdmin, change);
}

}  // namespace lemon
