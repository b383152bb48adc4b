// How a lemonade-server command reaches a router:
//
//   find_running_server()  the pid file's router while its serve lock is held
//                          (or while that pid still runs lemonade-router, for
//                          a server Lemonade's own CLI started), else whatever
//                          answers GET /live on the configured host and port
//                          (a server systemd runs);
//   ServerSession          that server, or a temporary router on a free
//                          loopback port that lives as long as the session
//                          (Lemonade 9.4.1 starts one on port 8000; ours never
//                          collides with a server or a second command);
//   OwnedServer            a router this CLI runs as `the` server (serve,
//                          run): serve lock taken first, pid file written
//                          right after fork, before the router can listen, so
//                          `stop` never sees a listening server it cannot find.
//
// Thread-safety: one thread per object.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lemon/cli/router_launcher.h"
#include "lemon/cli/runtime_files.h"
#include "lemon/cli/server_client.h"
#include "lemon/core/error.h"

namespace lemon::cli {

struct CliContext {
  RuntimePaths paths;
  std::string host = "localhost";        // LEMONADE_HOST or --host
  int port = 8000;                       // LEMONADE_PORT or --port
  std::string api_key;                   // LEMONADE_API_KEY
  std::string router_binary;             // found at start; empty if none
  std::vector<std::string> router_args;  // serve/run options for a router we start

  static CliContext from_environment();
};

struct RunningServer {
  pid_t pid = 0;  // 0 when found only by its port
  int port = 0;
};

std::optional<RunningServer> find_running_server(const CliContext& ctx);

class ServerSession {
 public:
  // The running server, or a temporary one (an error if it cannot start).
  static Result<std::unique_ptr<ServerSession>> open(const CliContext& ctx);
  ~ServerSession();
  ServerSession(const ServerSession&) = delete;
  ServerSession& operator=(const ServerSession&) = delete;

  const ServerClient& client() const { return client_; }
  bool temporary() const { return router_ != nullptr; }

 private:
  ServerSession(ServerClient client, std::unique_ptr<LaunchedRouter> router)
      : client_(std::move(client)), router_(std::move(router)) {}
  ServerClient client_;
  std::unique_ptr<LaunchedRouter> router_;
};

class OwnedServer {
 public:
  // kConflict when another serve holds the lock. `echo` copies the router's
  // output to stdout; it always goes to paths.log_file() too.
  static Result<std::unique_ptr<OwnedServer>> start(const CliContext& ctx, bool echo);
  ~OwnedServer();  // stops the router if it still runs, removes the record
  OwnedServer(const OwnedServer&) = delete;
  OwnedServer& operator=(const OwnedServer&) = delete;

  int port() const { return port_; }
  LaunchedRouter& router() { return *router_; }
  ServerClient client(const CliContext& ctx) const;
  // Stops the router (SIGTERM, then SIGKILL after `grace`); its exit code.
  int stop(std::chrono::milliseconds grace);

 private:
  OwnedServer(ServeLock lock, std::string pid_file)
      : lock_(std::move(lock)), pid_file_(std::move(pid_file)) {}
  ServeLock lock_;
  std::string pid_file_;
  std::unique_ptr<LaunchedRouter> router_;
  int port_ = 0;
};

}  // namespace lemon::cli
