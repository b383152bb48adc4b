#include "bench_env.h"

#include <algorithm>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace bench {
namespace fs = std::filesystem;

long long mono_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
}

long rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      long kib = -1;
      in >> kib;
      return kib;
    }
    in.ignore(4096, '\n');
  }
  return -1;
}

double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string content;
  std::getline(in, content);
  auto close = content.rfind(')');
  if (close == std::string::npos) {
    return -1;
  }
  std::istringstream rest(content.substr(close + 2));
  std::string field;
  long long utime = 0;
  long long stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) {
      utime = std::stoll(field);
    } else if (i == 15) {
      stime = std::stoll(field);
    }
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

nlohmann::json get_json(int port, const std::string& path) {
  lemon::net::UpstreamClient client("127.0.0.1", port);
  lemon::net::UpstreamRequest req;
  req.method = "GET";
  req.path = path;
  auto resp = client.send(req, {});
  if (!resp.ok()) {
    throw std::runtime_error("GET " + path + ": " + resp.error().message());
  }
  return nlohmann::json::parse(resp->body);
}

int post_json(int port, const std::string& path, const nlohmann::json& body) {
  lemon::net::UpstreamClient client("127.0.0.1", port);
  std::string text = body.dump();
  lemon::net::UpstreamRequest req;
  req.path = path;
  req.content_type = "application/json";
  req.body = text;
  auto resp = client.send(req, {});
  if (!resp.ok()) {
    throw std::runtime_error("POST " + path + ": " + resp.error().message());
  }
  return resp->status;
}

BenchEnv::BenchEnv(Paths paths)
    : paths_(std::move(paths)), launcher_(lemon::make_posix_process_launcher()) {
  char tmpl[] = "/tmp/lemon-bench-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  root_ = tmpl;
  fs::create_directories(root_ + "/cache");
  fs::create_directories(root_ + "/hf");
}

BenchEnv::~BenchEnv() {
  stop_router();
  stop_direct_backend();
  stop_fake_hub();
  std::error_code ec;
  fs::remove_all(root_, ec);
}

void BenchEnv::add_model(const std::string& name, const std::string& file,
                         const std::string& label) {
  models_[name] = {{"checkpoint", file.empty() ? paths_.model_file : file},
                   {"recipe", "llamacpp"},
                   {"source", "local_path"}};
  if (!label.empty()) {
    models_[name]["labels"] = {label};
  }
  std::ofstream(root_ + "/cache/user_models.json") << models_.dump(2);
}

int BenchEnv::free_port() const {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

void BenchEnv::wait_ready(int port, const std::string& path, lemon::ChildProcess& child) const {
  lemon::net::UpstreamClient client("127.0.0.1", port);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    auto status = client.probe(path, std::chrono::milliseconds(500));
    if (status.ok() && *status == 200) {
      return;
    }
    if (child.wait_exit_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(2))) {
      std::string tail;
      for (const auto& l : child.last_lines(20)) {
        tail += l + "\n";
      }
      throw std::runtime_error("process exited while starting:\n" + tail);
    }
  }
  throw std::runtime_error("process did not become ready on port " + std::to_string(port));
}

int BenchEnv::start_router(const std::vector<std::string>& args,
                           const std::vector<std::pair<std::string, std::string>>& env) {
  stop_router();
  router_port_ = free_port();
  lemon::SpawnSpec spec;
  spec.executable = paths_.router;
  // As many llama.cpp slots as the most concurrent scenario, on both sides
  // (see start_direct_backend), so no request waits for a slot and the
  // comparison measures the router alone.
  spec.args = {"--port", std::to_string(router_port_), "--llamacpp", "cpu"};
  if (std::find(args.begin(), args.end(), "--parallel") == args.end()) {
    spec.args.insert(spec.args.end(), {"--parallel", std::to_string(kBenchSlots)});
  }
  spec.args.insert(spec.args.end(), args.begin(), args.end());
  spec.env = {{"LEMONADE_CACHE_DIR", root_ + "/cache"},
              {"HF_HUB_CACHE", root_ + "/hf"},
              {"LEMONADE_LLAMACPP_CPU_BIN", paths_.llama_server}};
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  spec.log_tag = "router";
  spec.kept_lines = 2000;
  router_ = spawn_ready(spec, router_port_, "/live");
  return router_port_;
}

std::shared_ptr<lemon::ChildProcess> BenchEnv::spawn_ready(const lemon::SpawnSpec& spec, int port,
                                                           const std::string& ready_path) {
  auto child = launcher_->spawn(spec);
  if (!child.ok()) {
    throw std::runtime_error("cannot start " + spec.log_tag + ": " + child.error().message());
  }
  wait_ready(port, ready_path, **child);
  return *child;
}

void BenchEnv::stop(std::shared_ptr<lemon::ChildProcess>& child) {
  if (child) {
    child->terminate(std::chrono::seconds(10));
    child.reset();
  }
}

void BenchEnv::stop_router() {
  stop(router_);
}

int BenchEnv::start_fake_hub(const std::string& root) {
  stop_fake_hub();
  int port = free_port();
  lemon::SpawnSpec spec;
  spec.executable = paths_.fakes_dir + "/fake-hub";
  spec.args = {"--root", root, "--port", std::to_string(port)};
  spec.log_tag = "fake-hub";
  hub_ = spawn_ready(spec, port, "/_fake/log");
  return port;
}

void BenchEnv::stop_fake_hub() {
  stop(hub_);
}

int BenchEnv::run_to_end(const std::string& executable, const std::vector<std::string>& args) {
  lemon::SpawnSpec spec;
  spec.executable = executable;
  spec.args = args;
  spec.log_tag = executable;
  auto child = launcher_->spawn(spec);
  if (!child.ok()) {
    return -1;
  }
  (*child)->wait_exit_until(std::chrono::steady_clock::now() + std::chrono::hours(1));
  auto status = (*child)->exit_status();
  return status && !status->signaled ? status->code : -1;
}

pid_t BenchEnv::router_pid() const {
  return router_ ? router_->pid() : -1;
}

std::vector<std::string> BenchEnv::router_log(std::size_t n) const {
  return router_ ? router_->last_lines(n) : std::vector<std::string>{};
}

int BenchEnv::start_direct_backend(int slots) {
  stop_direct_backend();
  int port = free_port();
  lemon::SpawnSpec spec;
  spec.executable = paths_.llama_server;
  spec.args = {"-m",         paths_.model_file,     "--port",     std::to_string(port),
               "--host",     "127.0.0.1",           "--ctx-size", std::to_string(4096 * slots),
               "--parallel", std::to_string(slots), "-ngl",       "0"};
  spec.log_tag = "direct backend";
  direct_ = spawn_ready(spec, port, "/health");
  return port;
}

void BenchEnv::stop_direct_backend() {
  stop(direct_);
}

BenchEnv::StartStop BenchEnv::time_direct_start_stop() {
  // The command line the router gives a model (one slot, the default
  // context), so the two starts do the same work.
  const int port = free_port();
  lemon::SpawnSpec spec;
  spec.executable = paths_.llama_server;
  spec.args = {"-m", paths_.model_file, "--ctx-size",         "4096",   "--parallel",
               "1",  "--port",          std::to_string(port), "--host", "127.0.0.1"};
  spec.log_tag = "direct start";
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto child = launcher_->spawn(spec);
  if (!child.ok()) {
    throw std::runtime_error("cannot start the backend: " + child.error().message());
  }
  // Probed as the router probes it: at once after each output line, else
  // every 2 ms.
  lemon::net::UpstreamClient client("127.0.0.1", port);
  for (;;) {
    auto status = client.probe("/health", std::chrono::milliseconds(500));
    if (status.ok() && *status == 200) {
      break;
    }
    if ((*child)->wait_output_or_exit_until(Clock::now() + std::chrono::milliseconds(2))) {
      throw std::runtime_error("the backend exited while starting");
    }
    if (Clock::now() - t0 > std::chrono::seconds(60)) {
      throw std::runtime_error("the backend did not become ready");
    }
  }
  StartStop out;
  out.start_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  const auto t1 = Clock::now();
  (*child)->terminate(std::chrono::seconds(10));
  out.stop_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
  return out;
}

}  // namespace bench
