#include "lemon/cli/server_connection.h"

#include <cstdlib>
#include <ctime>

namespace lemon::cli {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

constexpr auto kRouterStopGrace = std::chrono::seconds(30);

}  // namespace

CliContext CliContext::from_environment() {
  CliContext ctx;
  ctx.paths = RuntimePaths::from_environment();
  ctx.host = env_or("LEMONADE_HOST", "localhost");
  ctx.port = std::atoi(env_or("LEMONADE_PORT", "8000").c_str());
  if (ctx.port <= 0 || ctx.port > 65535) {
    ctx.port = 8000;
  }
  // As Lemonade's clients: the admin key when there is one (docs/auth.md).
  ctx.api_key = env_or("LEMONADE_ADMIN_API_KEY", env_or("LEMONADE_API_KEY", ""));
  ctx.router_binary = find_router_binary();
  return ctx;
}

std::optional<RunningServer> find_running_server(const CliContext& ctx) {
  auto record = read_server_record(ctx.paths.pid_file());
  if (record && (serve_lock_held(ctx.paths.lock_file()) || is_router_process(record->pid))) {
    return RunningServer{record->pid, record->port};
  }
  if (!record && serve_lock_held(ctx.paths.lock_file())) {
    // A serve between taking its lock and forking: its record follows at
    // once. Waiting here is what keeps `stop` right after `serve` correct.
    for (int i = 0; i < 200 && !record; ++i) {
      struct timespec ts {
        0, 10'000'000
      };
      ::nanosleep(&ts, nullptr);
      record = read_server_record(ctx.paths.pid_file());
    }
    if (record) {
      return RunningServer{record->pid, record->port};
    }
  }
  ServerClient probe(ctx.host, ctx.port, ctx.api_key);
  auto live = probe.get("/live", std::chrono::seconds(2));
  if (live.status == 200) {
    return RunningServer{0, ctx.port};
  }
  return std::nullopt;
}

Result<std::unique_ptr<ServerSession>> ServerSession::open(const CliContext& ctx) {
  if (auto running = find_running_server(ctx)) {
    return std::unique_ptr<ServerSession>(
        new ServerSession(ServerClient(ctx.host, running->port, ctx.api_key), nullptr));
  }
  if (ctx.router_binary.empty()) {
    return Error(ErrorCode::kBackendBinaryMissing,
                 "no server is running and lemonade-router was found neither beside "
                 "lemonade-server nor on PATH");
  }
  LaunchSpec spec;
  spec.binary = ctx.router_binary;
  spec.args = {"--host", "127.0.0.1", "--port", "0"};
  auto router = LaunchedRouter::start(spec);
  if (!router.ok()) {
    return std::move(router).error();
  }
  auto port = (*router)->wait_ready();
  if (!port.ok()) {
    return Error(ErrorCode::kSpawnFailed,
                 "could not start a temporary server: " + port.error().message());
  }
  return std::unique_ptr<ServerSession>(
      new ServerSession(ServerClient("127.0.0.1", *port, ctx.api_key), std::move(router).value()));
}

ServerSession::~ServerSession() {
  if (router_) {
    router_->stop(kRouterStopGrace);
  }
}

Result<std::unique_ptr<OwnedServer>> OwnedServer::start(const CliContext& ctx, bool echo) {
  if (ctx.router_binary.empty()) {
    return Error(ErrorCode::kBackendBinaryMissing,
                 "lemonade-router was found neither beside lemonade-server nor on PATH");
  }
  std::string why;
  auto lock = ServeLock::try_acquire(ctx.paths.lock_file(), &why);
  if (!lock) {
    if (!why.empty()) {
      return Error(ErrorCode::kInternal, why);
    }
    return Error(ErrorCode::kConflict, "another lemonade-server serve is already running");
  }
  std::unique_ptr<OwnedServer> owned(new OwnedServer(std::move(*lock), ctx.paths.pid_file()));
  LaunchSpec spec;
  spec.binary = ctx.router_binary;
  spec.args = ctx.router_args;
  spec.echo = echo;
  spec.log_file = ctx.paths.log_file();
  spec.inherit_fd = owned->lock_.fd();
  auto router = LaunchedRouter::start(spec);
  if (!router.ok()) {
    return std::move(router).error();
  }
  owned->router_ = std::move(router).value();
  // Recorded before the router can listen (it is still starting up).
  if (Status s = write_server_record(owned->pid_file_, {owned->router_->pid(), ctx.port});
      !s.ok()) {
    return s.error();
  }
  auto port = owned->router_->wait_ready();
  if (!port.ok()) {
    return std::move(port).error();
  }
  owned->port_ = *port;
  if (*port != ctx.port) {
    (void)write_server_record(owned->pid_file_, {owned->router_->pid(), *port});
  }
  return owned;
}

OwnedServer::~OwnedServer() {
  if (router_) {
    router_->stop(kRouterStopGrace);
    remove_server_record(pid_file_, router_->pid());
  }
}

ServerClient OwnedServer::client(const CliContext& ctx) const {
  return ServerClient(ctx.host, port_, ctx.api_key);
}

int OwnedServer::stop(std::chrono::milliseconds grace) {
  int code = router_->stop(grace);
  remove_server_record(pid_file_, router_->pid());
  return code;
}

}  // namespace lemon::cli
