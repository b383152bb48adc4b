// lemon-route-snapshot: the router's behaviour, route by route, as a file
// that a refactor must leave unchanged (tests/snapshots/routes.json).
//
// It starts the real lemonade-router twice against the fake backends, in a
// fresh temporary world (TestEnv): a model of every type, a preset, a profile,
// the Ollama listener. The first run has no API key and sends the fixed
// requests of snapshot_plan.cpp in order, covering every route under every
// prefix with its usual refusals (bad method, malformed JSON, missing fields,
// unknown model), and ends with POST /internal/shutdown. The second run has
// API keys and asks every route without one, then a few with keys. For each
// request it records the status, the Content-Type, a few headers (Allow,
// Retry-After, WWW-Authenticate, Access-Control-*, X-Lemonade-*) and the
// body's shape (support/response_shape.h): types, not values, except for
// enum-like fields; an endless SSE stream is read up to its first event.
//
// Every route is covered: the router's own GET /internal/routes lists what
// was registered, and the tool fails naming any route (under any prefix) that
// no request reaches; the paths answered 501 for every method are not in that
// list, so snapshot_plan.cpp names them (not_implemented_paths).
//
//   lemon-route-snapshot              compare with tests/snapshots/routes.json;
//                                     exit 1 with the differences
//   lemon-route-snapshot --update     rewrite the file (after a deliberate
//                                     change of behaviour; review its diff)
//   lemon-route-snapshot --out FILE   also write what this run saw to FILE
//
// ctest runs it as integration.route_snapshot. A route added to the router
// needs a request in snapshot_plan.cpp, then --update.
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>
#include <string_view>

#include "snapshot/snapshot_diff.h"
#include "snapshot/snapshot_plan.h"
#include "support/http_client.h"
#include "support/raw_http.h"
#include "support/response_shape.h"
#include "support/router_process.h"
#include "support/sse_reader.h"
#include "support/test_env.h"

namespace lemon::snapshot {
namespace {

using nlohmann::json;
using testing::HttpReply;
using testing::RouterProcess;
using testing::ShapeMasks;
using testing::TestEnv;

const std::string kDefaultFile = std::string(LEMON_SOURCE_DIR) + "/tests/snapshots/routes.json";
constexpr std::string_view kOllamaLine = "Ollama API also served on http://";

struct Options {
  bool update = false;
  std::string file = kDefaultFile;
  std::string out;
};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool recorded_header(const std::string& name) {
  const std::string n = lower(name);
  return n == "allow" || n == "retry-after" || n == "www-authenticate" ||
         n.rfind("access-control-", 0) == 0 || n.rfind("x-lemonade-", 0) == 0;
}

// The world both runs share: models of every type, a preset, a profile.
void prepare(TestEnv& env) {
  env.add_every_type();
  testing::write_file_atomically(
      env.cache_dir() + "/presets.json",
      json{{"coder", {{"model", "user.a"}, {"sampling", {{"temperature", 0.3}}}}}}.dump());
  env.write_config({{"profiles", {{"snap", {{"models", {"user.a"}}}}}}});
}

std::unique_ptr<RouterProcess> start(const TestEnv& env,
                                     const std::map<std::string, std::string>& extra) {
  auto vars = env.router_env();
  for (const auto& [k, v] : env.config_env()) {
    vars[k] = v;
  }
  for (const auto& [k, v] : extra) {
    vars[k] = v;
  }
  auto router = std::make_unique<RouterProcess>(
      std::vector<std::string>{"--port", "0", "--llamacpp", "cpu", "--ollama-port", "0"}, vars);
  if (router->wait_listening() <= 0) {
    throw std::runtime_error("the router did not start:\n" + router->log_text());
  }
  return router;
}

int ollama_port(const RouterProcess& router) {
  if (!router.wait_for_log(kOllamaLine)) {
    throw std::runtime_error("the router did not say where the Ollama API listens");
  }
  for (const auto& line : router.log_lines()) {
    if (auto at = line.find(kOllamaLine); at != std::string::npos) {
      auto colon = line.find(':', at + kOllamaLine.size());
      return std::atoi(line.c_str() + colon + 1);
    }
  }
  return 0;
}

class Runner {
 public:
  Runner(int port, int ollama, ShapeMasks masks)
      : port_(port), ollama_(ollama), masks_(std::move(masks)) {}

  Snapshot run(const Case& c) {
    std::string path = c.path;
    for (const auto& [name, value] : captured_) {
      for (std::size_t at; (at = path.find("{" + name + "}")) != std::string::npos;) {
        path.replace(at, name.size() + 2, value);
      }
    }
    const int port = c.listener == Listener::kOllama ? ollama_ : port_;
    Snapshot entry = {{"request", c.method + " " + c.path}};
    if (c.listener == Listener::kOllama) {
      entry["listener"] = "ollama";
    }
    if (!c.summary.empty()) {
      entry["body"] = c.summary;
    }
    if (c.content_type != "application/json" && !c.content_type.empty()) {
      entry["body_type"] = c.content_type.substr(0, c.content_type.find(';'));
    }
    for (const auto& [k, v] : c.headers) {
      std::string line = k;
      line.append(": ").append(v);
      entry["sent"].push_back(line);
    }
    entry["note"] = c.note;
    if (c.read == Read::kFirstEvent || c.read == Read::kHead) {
      first_event(port, path, c, entry);
      return entry;
    }
    auto headers = c.headers;
    if (!c.content_type.empty()) {
      headers.emplace_back("Content-Type", c.content_type);
    }
    const HttpReply r = testing::raw_request(port, c.method, path, headers, c.body);
    entry["status"] = r.status;
    if (r.status == 0) {
      entry["error"] = "no response";
      return entry;
    }
    const std::string type = r.header("Content-Type");
    if (!type.empty()) {
      entry["content_type"] = type;
    }
    json recorded = json::object();
    for (const auto& [k, v] : r.headers) {
      if (recorded_header(k)) {
        recorded[k] = lower(k) == "retry-after" ? "<seconds>" : masks_.apply(v);
      }
    }
    if (!recorded.empty()) {
      entry["headers"] = Snapshot(recorded);
    }
    entry["shape"] = testing::body_shape(type, r.body, masks_for_path(path));
    if (!c.capture.empty()) {
      const json answer = r.json();
      captured_[c.capture] = answer.is_object() ? answer.value("id", "") : "";
    }
    return entry;
  }

 private:
  // What this machine has (GPUs, NPUs) and how busy its CPU was a moment
  // ago are not the router's behaviour.
  ShapeMasks masks_for_path(const std::string& path) const {
    ShapeMasks masks = masks_;
    const std::string bare = path.substr(0, path.find('?'));
    auto ends_with = [&](std::string_view tail) {
      return bare.size() >= tail.size() &&
             bare.compare(bare.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (ends_with("/system-info")) {
      masks.machine_keys = {"devices"};
    } else if (ends_with("/system-stats")) {
      masks.machine_keys = {"cpu_percent", "gpu_percent", "npu_percent", "vram_gb"};
    }
    return masks;
  }

  void first_event(int port, const std::string& path, const Case& c, Snapshot& entry) {
    testing::SseStream stream(port, "GET", path, "", c.headers);
    if (!stream.read_head()) {
      entry["status"] = 0;
      entry["error"] = "no response head";
      return;
    }
    entry["status"] = stream.status();
    const std::string type = stream.header("content-type");
    entry["content_type"] = type;
    if (type.rfind("text/event-stream", 0) != 0) {
      entry["shape"] = testing::body_shape(type, stream.read_body(), masks_);
      return;
    }
    if (c.read == Read::kHead) {
      stream.disconnect();  // a stream with no event to wait for
      return;
    }
    auto event = stream.next_data(testing::kWait);
    while (event && event->data.empty() && event->event.empty()) {
      event = stream.next_data(testing::kWait);  // retry: frames
    }
    entry["shape"] = Snapshot::array();
    if (event) {
      entry["shape"].push_back(
          Snapshot(testing::sse_event_shape(event->event, event->data, masks_)));
    }
    stream.disconnect();
  }

  int port_;
  int ollama_;
  ShapeMasks masks_;
  std::map<std::string, std::string> captured_;
};

// Runs `c`, saying so on stderr when it takes long: the whole run should
// stay within seconds.
Snapshot timed(Runner& runner, const Case& c) {
  const auto started = std::chrono::steady_clock::now();
  Snapshot entry = runner.run(c);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
  if (took > std::chrono::seconds(1)) {
    std::cerr << "slow: " << c.method << " " << c.path << " " << c.summary << " took "
              << took.count() << " s\n";
  }
  return entry;
}

// GET /internal/routes: "METHOD path" of every route registered, with scope.
json registered_routes(int port, const testing::HeaderList& headers = {}) {
  HttpReply r = testing::raw_request(port, "GET", "/internal/routes", headers);
  if (r.status != 200) {
    throw std::runtime_error("GET /internal/routes answered " + std::to_string(r.status));
  }
  const json answer = r.json();
  std::vector<std::string> routes;
  for (const auto& route : answer.at("routes")) {
    routes.push_back(route.at("route").get<std::string>() + " (" +
                     route.at("scope").get<std::string>() + ")");
  }
  std::sort(routes.begin(), routes.end());
  return routes;
}

std::string route_path(const std::string& route) {  // "GET /x (scope)" -> "/x"
  const auto space = route.find(' ');
  return route.substr(space + 1, route.find(" (") - space - 1);
}

bool reaches(const std::string& route_path_pattern, std::string path) {
  path = path.substr(0, path.find('?'));
  if (auto at = path.find("{session}"); at != std::string::npos) {
    path.replace(at, 9, "x");
  }
  const auto param = route_path_pattern.find("{id}");
  if (param == std::string::npos) {
    return path == route_path_pattern;
  }
  const std::string base = route_path_pattern.substr(0, param);
  return path.size() > base.size() && path.compare(0, base.size(), base) == 0;
}

// Every registered route under every prefix, and every not-implemented path,
// that no request of `cases` reaches.
std::vector<std::string> uncovered(const json& routes, const std::vector<Case>& cases) {
  std::vector<std::string> missing;
  auto covered = [&](const std::string& method, const std::string& path) {
    return std::any_of(cases.begin(), cases.end(), [&](const Case& c) {
      // A WebSocket route is reached by a GET that asks for the upgrade.
      const bool upgrade = std::any_of(c.headers.begin(), c.headers.end(), [](const auto& h) {
        return h.first == "Upgrade" && h.second == "websocket";
      });
      const bool method_matches = method.empty() || c.method == method ||
                                  (method == "WEBSOCKET" && c.method == "GET" && upgrade);
      return c.listener == Listener::kMain && method_matches && reaches(path, c.path);
    });
  };
  const std::string v1 = api_prefixes().front();
  for (const auto& route : routes) {
    const std::string text = route.get<std::string>();
    const std::string method = text.substr(0, text.find(' '));
    const std::string path = route_path(text);
    std::vector<std::string> paths = {path};
    if (path.rfind(v1, 0) == 0) {
      paths.clear();
      for (const auto& prefix : api_prefixes()) {
        paths.push_back(prefix + path.substr(v1.size()));
      }
    }
    for (const auto& p : paths) {
      if (!covered(method, p)) {
        std::string unreached = method;
        missing.push_back(unreached.append(" ").append(p));
      }
    }
  }
  for (const auto& path : not_implemented_paths()) {
    if (!covered("", path)) {
      missing.push_back("(any method) " + path);
    }
  }
  return missing;
}

// Each route once, with no API key, then keyed_plan().
std::vector<Case> keyless_probes(const json& routes) {
  std::vector<Case> cases;
  for (const auto& route : routes) {
    const std::string text = route.get<std::string>();
    Case c;
    c.method = text.substr(0, text.find(' '));
    c.path = route_path(text);
    if (auto at = c.path.find("{id}"); at != std::string::npos) {
      c.path.replace(at, 4, "x");
    }
    if (c.method != "GET") {
      c.body = "{}";
      c.summary = "{}";
      c.content_type = "application/json";
    }
    c.note = "no API key";
    cases.push_back(std::move(c));
  }
  for (auto& c : keyed_plan()) {
    cases.push_back(std::move(c));
  }
  return cases;
}

ShapeMasks masks_for(const TestEnv& env) {
  ShapeMasks masks;
  masks.literals = {
      {LEMON_FAKES_DIR, "<fakes>"}, {env.root(), "<tmp>"}, {LEMON_SOURCE_DIR, "<source>"}};
  return masks;
}

Snapshot take_snapshot() {
  TestEnv env;
  prepare(env);
  Snapshot snapshot = {
      {"about",
       "The router's routes, statuses and response shapes for fixed requests "
       "(tests/snapshot/route_snapshot.cpp). Regenerate: build-test/tests/lemon-route-snapshot "
       "--update; see docs/testing.md."}};
  json routes;
  std::vector<Case> open = open_plan();
  {
    auto router = start(env, {});
    routes = registered_routes(router->port());
    Runner runner(router->port(), ollama_port(*router), masks_for(env));
    Snapshot entries = Snapshot::array();
    for (const auto& c : open) {
      entries.push_back(timed(runner, c));
    }
    snapshot["routes"] = routes;
    snapshot["open"] = std::move(entries);
    if (!router->wait_exit(testing::kWait)) {
      throw std::runtime_error("the router did not exit after POST /internal/shutdown");
    }
  }
  std::vector<Case> keyed = keyless_probes(routes);
  {
    auto router =
        start(env, {{"LEMONADE_API_KEY", kUserKey}, {"LEMONADE_ADMIN_API_KEY", kAdminKey}});
    Runner runner(router->port(), ollama_port(*router), masks_for(env));
    Snapshot entries = Snapshot::array();
    for (const auto& c : keyed) {
      entries.push_back(timed(runner, c));
    }
    snapshot["keyed"] = std::move(entries);
  }
  if (auto missing = uncovered(routes, open); !missing.empty()) {
    std::string text = "routes no request of snapshot_plan.cpp reaches (add one, then --update):";
    for (const auto& m : missing) {
      text += "\n  " + m;
    }
    throw std::runtime_error(text);
  }
  return snapshot;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) {
    throw std::runtime_error("cannot write " + path);
  }
}

int run(const Options& options) {
  const auto started = std::chrono::steady_clock::now();
  const Snapshot actual = take_snapshot();
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started);
  const std::size_t requests = actual["open"].size() + actual["keyed"].size();
  std::cout << "route snapshot: " << requests << " requests, " << actual["routes"].size()
            << " routes, " << static_cast<int>(seconds.count() * 10) / 10.0 << " s\n";
  if (!options.out.empty()) {
    write_text(options.out, snapshot_text(actual));
  }
  if (options.update) {
    write_text(options.file, snapshot_text(actual));
    std::cout << "wrote " << options.file << "\n";
    return 0;
  }
  std::ifstream in(options.file);
  if (!in) {
    std::cerr << "no snapshot at " << options.file << ": run with --update to make one\n";
    return 1;
  }
  const Snapshot expected = Snapshot::parse(in, nullptr, false);
  const std::string differences = describe_differences(expected, actual);
  if (differences.empty()) {
    std::cout << "the router answers as " << options.file << " says\n";
    return 0;
  }
  std::cerr
      << "The router's behaviour differs from " << options.file << " (- expected, + now):\n"
      << differences
      << "If the change is intended, run lemon-route-snapshot --update and commit the file.\n";
  return 1;
}

}  // namespace
}  // namespace lemon::snapshot

int main(int argc, char** argv) {
  lemon::snapshot::Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--update") {
      options.update = true;
    } else if ((arg == "--out" || arg == "--file") && i + 1 < argc) {
      (arg == "--out" ? options.out : options.file) = argv[++i];
    } else {
      std::cerr << "usage: lemon-route-snapshot [--update] [--file SNAPSHOT] [--out FILE]\n";
      return 2;
    }
  }
  ::signal(SIGPIPE, SIG_IGN);
  try {
    return lemon::snapshot::run(options);
  } catch (const std::exception& e) {
    std::cerr << "lemon-route-snapshot: " << e.what() << "\n";
    return 2;
  }
}
