// lemonade's verbs about the server: status, backends, config, logs, scan,
// check-updates, cleanup-cache, and the verbs this server does not offer.
// Messages follow Lemonade 11's CLI (src/cpp/cli/ at v11.7.0).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <set>

#include "lemon/cli/commands.h"
#include "lemon/cli/discovery.h"
#include "lemon/cli/lemonade_commands.h"

namespace lemon::cli {
namespace {

// `text` as 11's `config set` types it: JSON for [..] and {..}, then an
// integer, a decimal, true/false, else the text itself.
nlohmann::json typed_config_value(const std::string& text) {
  if ((text.starts_with("[") && text.ends_with("]")) ||
      (text.starts_with("{") && text.ends_with("}"))) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_discarded()) {
      return j;
    }
  }
  if (text == "true" || text == "false") {
    return text == "true";
  }
  if (!text.empty() && text.find_first_not_of("-0123456789") == std::string::npos &&
      text.find('-', 1) == std::string::npos && text != "-") {
    try {
      return std::stoll(text);
    } catch (const std::exception&) {
    }
  }
  if (!text.empty() && text.find_first_not_of("-0123456789.") == std::string::npos &&
      std::count(text.begin(), text.end(), '.') == 1) {
    char* end = nullptr;
    const double d = std::strtod(text.c_str(), &end);
    if (end != nullptr && *end == '\0') {
      return d;
    }
  }
  return text;
}

std::string config_text(const nlohmann::json& v) {
  if (v.is_string()) {
    return v.get<std::string>().empty() ? "(empty)" : v.get<std::string>();
  }
  if (v.is_null()) {
    return "(empty)";
  }
  return v.dump();
}

int backend_operation(const LemonadeLine& line, const LemonadeTarget& target) {
  const std::string& spec = line.args.empty() ? std::string() : line.args.front();
  const auto colon = spec.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) {
    return fail("Install requires recipe:backend format (e.g., llamacpp:vulkan)");
  }
  const std::string recipe = spec.substr(0, colon);
  const std::string backend = spec.substr(colon + 1);
  const ServerClient client = target.client();
  if (line.action == "uninstall") {
    return post_and_report(target, "/api/v1/uninstall", {{"recipe", recipe}, {"backend", backend}},
                           "uninstalling backend", "Backend uninstalled successfully: " + spec);
  }
  std::cout << "Installing backend: " << spec << std::endl;
  nlohmann::json body = {
      {"recipe", recipe}, {"backend", backend}, {"stream", true}, {"force", line.force}};
  Status done = follow_progress_stream(client, "/api/v1/install", body, std::cout,
                                       ::isatty(STDOUT_FILENO) == 1);
  if (!done.ok()) {
    return fail("Error installing backend: " + done.error().message());
  }
  std::cout << "Backend installed successfully: " << spec << std::endl;
  return 0;
}

}  // namespace

int fail_request(const std::string& what, const HttpResult& reply, const LemonadeTarget& target) {
  if (reply.status == 0) {
    std::cerr << "Error " << what << ": Could not connect to Lemonade server at " << target.url()
              << " (" << reply.error_text() << ").\nMake sure the server is running and try again."
              << std::endl;
    return 1;
  }
  if (reply.status == 401 || reply.status == 403) {
    std::cerr << "Error " << what << ": the server at " << target.url()
              << " refused the request: cannot authenticate ("
              << (target.api_key.empty() ? "no API key given; set --api-key or LEMONADE_API_KEY"
                                         : "the API key was not accepted")
              << ")" << std::endl;
    return 1;
  }
  std::cerr << "Error " << what << ": " << reply.error_text() << std::endl;
  return 1;
}

int post_and_report(const LemonadeTarget& target, std::string_view path, const nlohmann::json& body,
                    const std::string& what, const std::string& done) {
  auto reply = target.client().post(path, body);
  if (!reply.ok()) {
    return fail_request(what, reply, target);
  }
  std::cout << done << std::endl;
  return 0;
}

void open_in_browser(const std::string& url) {
  std::cout << "Opening URL: " << url << std::endl;
  const char* display = std::getenv("DISPLAY");
  const char* wayland = std::getenv("WAYLAND_DISPLAY");
  const bool has_display =
      (display != nullptr && *display != '\0') || (wayland != nullptr && *wayland != '\0');
  if (has_display) {
    const char* argv[] = {"xdg-open", url.c_str(), nullptr};
    pid_t pid = 0;
    if (::posix_spawnp(&pid, "xdg-open", nullptr, nullptr, const_cast<char* const*>(argv),
                       environ) == 0) {
      int status = 0;
      if (::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        return;
      }
    }
  }
  std::cout << "Couldn't launch browser. Open the URL above manually: " << url << std::endl;
}

int verb_status(const LemonadeLine& line, const LemonadeTarget& target) {
  const ServerClient client = target.client();
  auto reply = client.get("/api/v1/health", std::chrono::seconds(5));
  if (reply.status == 0) {
    if (line.json) {
      std::cerr << "Server is not running" << std::endl;
      return 1;
    }
    return fail_request("fetching health status", reply, target);
  }
  if (!reply.ok()) {
    return fail_request("fetching health status", reply, target);
  }
  if (line.json) {
    std::cout << nlohmann::json{{"port", target.port}}.dump() << std::endl;
    return 0;
  }
  const nlohmann::json health = reply.json();
  if (!health.is_object()) {
    return fail("Error parsing health response JSON: not an object");
  }
  std::cout << "Server is running on port " << target.port << "\n\n";
  std::cout << std::left << std::setw(20) << "Property"
            << "Value\n"
            << std::setw(20) << "Version" << health.value("version", "unknown") << "\n";
  if (health.contains("websocket_port") && health["websocket_port"].is_number_integer()) {
    std::cout << std::setw(20) << "WebSocket Port" << health["websocket_port"].get<int>() << "\n";
  }
  if (health.contains("max_models") && health["max_models"].is_object()) {
    std::cout << std::setw(20) << "Max Models/Type" << health["max_models"].value("llm", 0) << "\n";
  }
  std::cout << "\n";
  const auto& loaded = health.value("all_models_loaded", nlohmann::json::array());
  if (loaded.empty()) {
    std::cout << "No models loaded." << std::endl;
    return 0;
  }
  std::cout << std::setw(30) << "Model" << std::setw(10) << "Type" << std::setw(10) << "Device"
            << std::setw(14) << "Recipe"
            << "Checkpoint\n";
  for (const auto& m : loaded) {
    std::string name = m.value("id", m.value("model_name", ""));
    if (m.value("pinned", false)) {
      name += " (pinned)";
    }
    std::cout << std::setw(30) << name << std::setw(10) << m.value("type", "") << std::setw(10)
              << m.value("device", "") << std::setw(14) << m.value("recipe", "")
              << m.value("checkpoint", "") << "\n";
  }
  std::cout.flush();
  return 0;
}

int verb_backends(const LemonadeLine& line, const LemonadeTarget& target) {
  if (line.action == "install" || line.action == "uninstall") {
    return backend_operation(line, target);
  }
  auto reply = target.client().get("/api/v1/system-info");
  const nlohmann::json info = reply.json();
  if (!reply.ok() || !info.is_object() || !info.contains("recipes")) {
    return fail_request("fetching backends", reply, target);
  }
  print_backends_table(info["recipes"], !line.all);
  return 0;
}

int verb_config(const LemonadeLine& line, const LemonadeTarget& target) {
  const ServerClient client = target.client();
  if (line.action == "set") {
    nlohmann::json change = nlohmann::json::object();
    for (const std::string& pair : line.args) {
      const auto eq = pair.find('=');
      if (eq == std::string::npos || eq == 0) {
        return fail("expected KEY=VALUE, got '" + pair + "'");
      }
      std::string key = pair.substr(0, eq);
      std::replace(key.begin(), key.end(), '-', '_');
      std::string path = "/" + key;  // "llamacpp.backend" nests: /llamacpp/backend
      std::replace(path.begin(), path.end(), '.', '/');
      change[nlohmann::json::json_pointer(path)] = typed_config_value(pair.substr(eq + 1));
    }
    auto reply = client.post("/internal/set", change);
    if (!reply.ok()) {
      if (reply.status == 400) {
        std::cerr << "Error setting config: " << reply.error_text()
                  << "\nRun `lemonade config` to see valid keys." << std::endl;
        return 1;
      }
      return fail_request("setting config", reply, target);
    }
    const nlohmann::json answer = reply.json();
    std::cout << "Configuration updated:\n" << change.dump(4) << std::endl;
    if (answer.is_object() && !answer.value("pending", nlohmann::json::array()).empty()) {
      std::cout << "Pending a restart: " << answer["pending"].dump() << std::endl;
    }
    return 0;
  }
  auto reply = client.get("/internal/config");
  const nlohmann::json config = reply.json();
  if (!reply.ok() || !config.is_object()) {
    return fail_request("fetching config", reply, target);
  }
  std::cout << "Server Configuration\n" << std::string(60, '-') << "\n  [General]\n";
  for (const auto& [key, value] : config.items()) {
    if (!value.is_object() && key != "config_version") {
      std::cout << "    " << std::left << std::setw(32) << key << config_text(value) << "\n";
    }
  }
  for (const auto& [section, values] : config.items()) {
    if (!values.is_object()) {
      continue;
    }
    std::cout << "\n  [" << section << "]\n";
    for (const auto& [key, value] : values.items()) {
      std::cout << "    " << std::left << std::setw(32)
                << std::string(section).append(".").append(key) << config_text(value) << "\n";
    }
  }
  std::cout << "\nTo change a value:  lemonade config set port=9000 llamacpp.backend=vulkan"
            << std::endl;
  return 0;
}

int verb_logs(const LemonadeLine&, const LemonadeTarget& target) {
  open_in_browser(target.url() + "/#log-panel");
  return 0;
}

int verb_scan(const LemonadeLine& line, const LemonadeTarget& target) {
  auto receiver = BeaconReceiver::bind(target.beacon_port);
  if (!receiver.ok()) {
    return fail("Could not bind to beacon port " + std::to_string(target.beacon_port));
  }
  std::cout << "Scanning for network beacons on port " << target.beacon_port << " for "
            << line.duration << " seconds...\nListening for beacons..." << std::endl;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(line.duration);
  std::vector<Beacon> found;
  std::set<std::string> urls;
  while (auto beacon = receiver->next(deadline, /*complete=*/true)) {
    if (urls.insert(beacon->url).second) {
      std::cout << "  Discovered: " << beacon->hostname << " at " << beacon->url << std::endl;
      found.push_back(*beacon);
    }
  }
  std::cout << "\nScan complete. Found " << found.size() << " beacon(s):\n";
  for (const Beacon& b : found) {
    std::cout << "  - " << b.hostname << " at " << b.url << "\n";
  }
  if (found.empty()) {
    std::cout << "  No beacons discovered.\n";
  }
  std::cout.flush();
  return 0;
}

int verb_check_updates(const LemonadeLine&, const LemonadeTarget& target) {
  auto reply = target.client().post("/api/v1/models/check-updates", nlohmann::json::object());
  const nlohmann::json answer = reply.json();
  if (!reply.ok() || !answer.is_object()) {
    return fail_request("checking for updates", reply, target);
  }
  const auto models = answer.value("models", nlohmann::json::array());
  if (models.empty()) {
    std::cout << "All downloaded models are up to date." << std::endl;
    return 0;
  }
  std::cout << "Updates available for " << models.size() << " model(s):\n";
  for (const auto& m : models) {
    std::cout << "  - " << (m.is_string() ? m.get<std::string>() : m.dump()) << "\n";
  }
  std::cout.flush();
  return 0;
}

int verb_cleanup_cache(const LemonadeLine& line, const LemonadeTarget& target) {
  std::cout << (line.dry_run ? "Previewing" : "Running") << " cache cleanup..." << std::endl;
  auto reply = target.client().post("/internal/cleanup-cache", {{"dry_run", line.dry_run}});
  const nlohmann::json answer = reply.json();
  if (!reply.ok() || !answer.is_object()) {
    return fail_request("cleaning the cache", reply, target);
  }
  const auto files = answer.value("orphaned_files", nlohmann::json::array());
  if (files.empty()) {
    std::cout << "No orphaned files found. Cache is clean." << std::endl;
    return 0;
  }
  char mb[32];
  for (const auto& f : files) {
    std::snprintf(mb, sizeof mb, "%.1f", f.value("size", 0.0) / (1024.0 * 1024.0));
    std::cout << "  " << f.value("path", "") << " (" << mb << " MB)";
    if (f.contains("model") && f["model"].is_string()) {
      std::cout << " [from " << f["model"].get<std::string>() << "]";
    }
    std::cout << "\n";
  }
  std::snprintf(mb, sizeof mb, "%.1f", answer.value("total_bytes", 0.0) / (1024.0 * 1024.0));
  if (line.dry_run) {
    std::cout << "Would free " << mb << " MB from " << files.size()
              << " file(s). Run without --dry-run to delete." << std::endl;
  } else {
    std::cout << "Freed " << mb << " MB from " << files.size() << " file(s)." << std::endl;
  }
  return 0;
}

int verb_not_offered(const LemonadeLine& line, const LemonadeTarget&) {
  std::cerr << "Error: `lemonade " << line.command
            << "` is not offered by this server (lemonade-router has no "
            << (line.command == "cloud" ? "cloud providers" : "telemetry export") << " yet)."
            << std::endl;
  return 2;
}

}  // namespace lemon::cli
