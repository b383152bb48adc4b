#include "lemon/backends/process_server.h"
#include "lemon/core/mutex.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include "lemon/backends/backend_secret.h"
#include "lemon/backends/bind_failure.h"
#include "lemon/backends/out_of_memory.h"
#include "lemon/core/log.h"
#include "lemon/process/socket_owner.h"

namespace lemon {
namespace {

// Readiness polls are 2 ms apart for the first 200 ms (a backend that is up
// in a few milliseconds is noticed at once; a refused probe costs about
// 20 us), then 20 ms apart for slow loads.
constexpr auto kFastReadyPoll = std::chrono::milliseconds(2);
constexpr auto kFastReadyPeriod = std::chrono::milliseconds(200);
constexpr auto kSlowReadyPoll = std::chrono::milliseconds(20);
constexpr int kPortAttempts = 3;
constexpr std::size_t kErrorTailLines = 20;
// ggml prints its allocation failure some lines before it exits.
constexpr std::size_t kOutOfMemoryScanLines = 80;

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) {
    out += l;
    out += '\n';
  }
  return out;
}

// "60 s", "1.5 s".
std::string stall_seconds_text(std::chrono::milliseconds ms) {
  const long long tenths = (ms.count() + 50) / 100;
  return std::to_string(tenths / 10) + (tenths % 10 != 0 ? "." + std::to_string(tenths % 10) : "") +
         " s";
}

}  // namespace

std::string backend_or_cpu(std::string_view recipe, const RecipeOptions& options) {
  std::string b = options.string_value(std::string(recipe) + "_backend");
  return b.empty() ? "cpu" : b;
}

ProcessServer::ProcessServer(ModelInfo model, RecipeOptions options, Device device,
                             const BackendEnvironment& env)
    : WrappedServer(std::move(model), std::move(options), device),
      env_(env),
      secret_(make_backend_secret()) {}

ProcessServer::~ProcessServer() {
  stop();
}

std::vector<std::pair<std::string, std::string>> ProcessServer::secret_env() const {
  return {};
}

std::vector<std::string> ProcessServer::required_roles() const {
  return {"main"};
}

std::vector<std::pair<std::string, std::string>> ProcessServer::release_env(
    const std::string& executable) const {
  std::string dir = std::filesystem::path(executable).parent_path().string();
  const char* existing = std::getenv("LD_LIBRARY_PATH");
  std::vector<std::pair<std::string, std::string>> env = {
      {"LD_LIBRARY_PATH", existing != nullptr && *existing != '\0' ? dir + ":" + existing : dir}};
  if (int gpu = options().int_value("gpu", -1); gpu >= 0) {
    // One variable per runtime, each naming the same index. Never
    // ROCR_VISIBLE_DEVICES as well: ROCm filters with it first and HIP then
    // numbers only the devices left, so index N >= 1 would name no GPU.
    for (const char* var :
         {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "GGML_VK_VISIBLE_DEVICES"}) {
      env.emplace_back(var, std::to_string(gpu));
    }
  }
  return env;
}

std::vector<std::pair<std::string, std::string>> ProcessServer::child_env(
    const std::string& executable) const {
  (void)executable;
  return {};
}

void ProcessServer::adjust_spawn(SpawnSpec& spec) {
  (void)spec;
}

void ProcessServer::ask_to_stop(ChildProcess& child) {
  (void)child;
}

std::vector<std::string> ProcessServer::command_line() const {
  {
    MutexLock lock(mu_);
    if (!argv_.empty()) {
      return argv_;
    }
  }
  if (executable_.empty()) {
    return {};
  }
  auto args = build_args(0);
  if (!args.ok()) {
    return {};
  }
  std::vector<std::string> out = {executable_};
  out.insert(out.end(), args->begin(), args->end());
  return out;
}

Status ProcessServer::prepare() {
  for (const auto& role : required_roles()) {
    if (model().resolved_path(role).empty()) {
      std::string what = model().missing_paths.empty()
                             ? "no file resolved for checkpoint '" + model().checkpoint() + "'"
                             : model().missing_paths.front();
      return Error(ErrorCode::kModelFilesMissing,
                   "model '" + model_name() + "' is not downloaded: missing " + what, "model");
    }
  }
  for (const auto& [role, path] : model().resolved_paths) {
    std::error_code ec;
    if (model().recipe != "flm" && !std::filesystem::exists(path, ec)) {
      return Error(ErrorCode::kModelFilesMissing,
                   "model '" + model_name() + "' file is missing: " + path, "model");
    }
  }
  auto exe = locate_backend_binary(binary_query(), env_.cache_dir, env_.binaries);
  if (!exe.ok()) {
    return std::move(exe).error();
  }
  executable_ = *exe;
  auto args = build_args(0);  // validates user arguments
  if (!args.ok()) {
    return std::move(args).error();
  }
  return ok_status();
}

bool ProcessServer::output_reports_out_of_memory(const std::vector<std::string>& /*lines*/) const {
  return false;
}

Error ProcessServer::exited_error(const ChildProcess& child) const {
  auto status = child.exit_status();
  std::string how = status ? status->describe() : std::string("unknown status");
  auto tail = child.last_lines(kErrorTailLines);
  // An allocation failure in the output, or the OOM killer's
  // SIGKILL (we send none while a server starts), is typed here, once.
  const bool out_of_memory =
      output_reports_out_of_memory(child.last_lines(kOutOfMemoryScanLines)) ||
      (status && killed_like_out_of_memory(*status));
  std::string message =
      binary_query().binary + " for model '" + model_name() +
      (out_of_memory ? "' ran out of memory while loading (" : "' exited during startup (") + how +
      ")";
  if (!tail.empty()) {
    message += ": " + tail.back();
  }
  return Error(out_of_memory ? ErrorCode::kOutOfMemory : ErrorCode::kBackendExited, message)
      .with_detail(join_lines(tail));
}

ProcessServer::ReadyOutcome ProcessServer::wait_ready(
    ChildProcess& child, net::UpstreamClient& client, std::chrono::steady_clock::time_point started,
    const std::function<bool()>& cancelled) const {
  const std::string path = health_path();
  const auto spawned = std::chrono::steady_clock::now();
  for (;;) {
    auto probe = client.probe(path, std::chrono::milliseconds(1000));
    if (probe.ok() && *probe == 200) {
      // The answer must come from our child, not from another program that
      // took the port first (e.g. a second router's backend).
      if (!process_alone_listens_on(child.pid(), client.port())) {
        return ReadyOutcome::kPortTaken;
      }
      return child.running() ? ReadyOutcome::kReady : ReadyOutcome::kExited;
    }
    auto now = std::chrono::steady_clock::now();
    const LoadDeadline due =
        load_deadline(started, load_watch_->signs(), env_.load_timeout, env_.load_stall_timeout);
    if (now >= due.at) {
      return due.stall ? ReadyOutcome::kStalled : ReadyOutcome::kTimedOut;
    }
    const auto deadline = due.at;
    if (cancelled && cancelled()) {
      return ReadyOutcome::kCancelled;
    }
    // Sleeps only until the next poll, and wakes at once if the child exits
    // or writes a line (backends say they are ready in their output, so the
    // probe that finds it ready follows at once).
    auto interval = now - spawned < kFastReadyPeriod ? kFastReadyPoll : kSlowReadyPoll;
    if (child.wait_output_or_exit_until(std::min(deadline, now + interval))) {
      return ReadyOutcome::kExited;
    }
  }
}

Status ProcessServer::start(const std::function<bool()>& cancelled) {
  if (executable_.empty()) {
    if (auto prepared = prepare(); !prepared.ok()) {
      return prepared;
    }
  }
  auto log = logger("backend");
  const auto started = std::chrono::steady_clock::now();
  for (int attempt = 1; attempt <= kPortAttempts; ++attempt) {
    auto port = env_.ports->acquire();
    if (!port.ok()) {
      return std::move(port).error();
    }
    secret_ = make_backend_secret();  // a new one for every process
    auto args = build_args(*port);
    if (!args.ok()) {
      env_.ports->release(*port);
      return std::move(args).error();
    }
    SpawnSpec spec;
    spec.executable = executable_;
    spec.args = std::move(*args);
    spec.env = child_env(executable_);
    // Through the environment, which /proc keeps private to the user, never
    // the command line, which every local user can read.
    const auto secret_vars = secret_env();
    spec.env.insert(spec.env.end(), secret_vars.begin(), secret_vars.end());
    spec.log_tag = model_name() + ":" + std::to_string(*port);
    spec.model = model_name();
    // Health polls and the context monitor's /slots reads are not news.
    spec.drop_lines_containing = {"GET " + health_path() + " ", "GET /health ", "GET /v1/health ",
                                  "GET /slots "};
    adjust_spawn(spec);
    // Every line but a health poll's is a sign of progress (load_watch.h).
    load_watch_->restart();
    spec.line_hook = [watch = load_watch_, hook = std::move(spec.line_hook),
                      polls = spec.drop_lines_containing](const std::string& line) {
      if (hook && hook(line)) {
        return true;  // the recipe's protocol line, which marks its own progress
      }
      if (std::none_of(polls.begin(), polls.end(), [&line](const std::string& poll) {
            return line.find(poll) != std::string::npos;
          })) {
        watch->activity(LoadClock::now());
      }
      return false;
    };
    if (log->should_log(spdlog::level::info)) {
      std::ostringstream cmd;
      cmd << spec.executable;
      for (const auto& a : spec.args) {
        cmd << ' ' << a;
      }
      log->info("starting {}: {}", model_name(), cmd.str());
    }
    auto spawned = env_.launcher->spawn(spec);
    if (!spawned.ok()) {
      env_.ports->release(*port);
      return std::move(spawned).error();
    }
    std::shared_ptr<ChildProcess> child = *spawned;
    auto client = std::make_unique<net::UpstreamClient>(
        "127.0.0.1", *port, 64, secret_vars.empty() ? std::string() : secret_);
    ReadyOutcome outcome = wait_ready(*child, *client, started, cancelled);
    if (outcome == ReadyOutcome::kReady) {
      {
        MutexLock lock(mu_);
        child_ = child;
        port_ = *port;
        client_ = std::move(client);
        argv_ = {spec.executable};
        argv_.insert(argv_.end(), spec.args.begin(), spec.args.end());
      }
      {
        MutexLock lock(exit_watch_->mu);
        exit_watch_->listener = exit_listener();
      }
      child->on_exit([watch = exit_watch_, name = model_name()](const ExitStatus& status) {
        std::function<void()> listener;
        {
          MutexLock lock(watch->mu);
          if (watch->stopping) {
            return;
          }
          ++watch->running;
          watch->running_thread = std::this_thread::get_id();
          listener = watch->listener;
        }
        logger("backend")->warn("{} exited unexpectedly ({})", name, status.describe());
        if (listener) {
          listener();
        }
        MutexLock lock(watch->mu);
        --watch->running;
        watch->cv.notify_all();
      });
      return ok_status();
    }
    child->terminate(env_.stop_grace);
    env_.ports->release(*port);
    switch (outcome) {
      case ReadyOutcome::kPortTaken:
        log->warn("port {} answers for another program; retrying {} on another port", *port,
                  model_name());
        continue;
      case ReadyOutcome::kCancelled:
        return Error(ErrorCode::kCancelled, "load of '" + model_name() + "' was cancelled");
      case ReadyOutcome::kStalled:
        return stalled_error(*child);
      case ReadyOutcome::kTimedOut:
        return Error(ErrorCode::kBackendStartTimeout,
                     binary_query().binary + " for model '" + model_name() +
                         "' did not become ready within " +
                         std::to_string(env_.load_timeout.count() / 1000) + " s")
            .with_detail(join_lines(child->last_lines(kErrorTailLines)));
      case ReadyOutcome::kExited:
      case ReadyOutcome::kReady:
        break;
    }
    // Someone else took the port between our probe and the child's bind:
    // not the model's fault, so try another port (no eviction, no retry cost).
    // The child's own word for it counts too: the other program may have
    // let the port go again by now.
    if ((port_in_use(*port) || output_reports_bind_failure(child->last_lines(kErrorTailLines))) &&
        attempt < kPortAttempts) {
      log->warn("port {} was taken while {} started; retrying on another port", *port,
                model_name());
      continue;
    }
    return exited_error(*child);
  }
  return Error(ErrorCode::kSpawnFailed, "could not find a free port for '" + model_name() + "'");
}

Error ProcessServer::stalled_error(const ChildProcess& child) const {
  const LoadSigns signs = load_watch_->signs();
  const auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - signs.last);
  return Error(ErrorCode::kBackendLoadStalled,
               binary_query().binary + " for model '" + model_name() +
                   "' stopped making progress while loading: nothing for " +
                   stall_seconds_text(quiet) + " (--load-stall-timeout " +
                   stall_seconds_text(env_.load_stall_timeout) + ") after it reached " +
                   (signs.stage.empty() ? std::string("its first report") : signs.stage))
      .with_detail(join_lines(child.last_lines(kErrorTailLines)));
}

std::string ProcessServer::exit_description() const {
  MutexLock lock(mu_);
  if (!child_) {
    return {};
  }
  auto status = child_->exit_status();
  return status ? status->describe() : std::string();
}

void ProcessServer::stop() {
  {
    MutexLock lock(exit_watch_->mu);
    exit_watch_->stopping = true;
    exit_watch_->cv.wait(lock, [&]() LEMON_REQUIRES(exit_watch_->mu) {
      return exit_watch_->running == 0 || exit_watch_->running_thread == std::this_thread::get_id();
    });
  }
  std::shared_ptr<ChildProcess> child;
  int port = 0;
  {
    MutexLock lock(mu_);
    child = child_;
    port = port_;
  }
  // Idle keep-alive connections first: a backend may wait for open
  // connections before it exits on SIGTERM.
  if (client_) {
    client_->close_idle();
  }
  if (child) {
    if (child->running()) {
      ask_to_stop(*child);
    }
    child->terminate(env_.stop_grace);
  }
  if (port != 0) {
    env_.ports->release(port);
  }
}

bool ProcessServer::exited() const {
  MutexLock lock(mu_);
  return child_ == nullptr || !child_->running();
}

std::string ProcessServer::base_url() const {
  MutexLock lock(mu_);
  return "http://127.0.0.1:" + std::to_string(port_);
}

std::optional<int> ProcessServer::pid() const {
  MutexLock lock(mu_);
  if (!child_) {
    return std::nullopt;
  }
  return static_cast<int>(child_->pid());
}

net::UpstreamClient& ProcessServer::client() {
  return *client_;
}

std::vector<std::string> ProcessServer::last_output(std::size_t n) const {
  MutexLock lock(mu_);
  return child_ ? child_->last_lines(n) : std::vector<std::string>{};
}

}  // namespace lemon
