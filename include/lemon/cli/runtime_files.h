// Where a `lemonade-server serve` leaves its traces, so that `status`, `stop`
// and every other command can find the server it started:
//
//   <dir>/lemonade-router.pid   "<router pid>\n<port>\n" (Lemonade 9.4.1's file)
//   <dir>/lemonade_Server.lock  flock()ed by serve and inherited by its router,
//                               so it is held exactly while either lives
//   <dir>/lemonade-server.log   the router's output while serve runs
//
// <dir> is LEMONADE_RUNTIME_DIR, else /tmp (where Lemonade looks). The lock,
// not the pid, says whether the record is live, so a reused pid never fools
// `status` or `stop`.
//
// Thread-safety: free functions and a move-only lock; any thread.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "lemon/core/error.h"

namespace lemon::cli {

struct RuntimePaths {
  std::string dir;
  std::string pid_file() const { return dir + "/lemonade-router.pid"; }
  std::string lock_file() const { return dir + "/lemonade_Server.lock"; }
  std::string log_file() const { return dir + "/lemonade-server.log"; }

  static RuntimePaths from_environment();
};

struct ServerRecord {
  pid_t pid = 0;
  int port = 0;
};

// The pid file's record, or nullopt if it is missing or malformed.
std::optional<ServerRecord> read_server_record(const std::string& pid_file);
// Replaces the pid file atomically (a reader never sees half of it).
Status write_server_record(const std::string& pid_file, const ServerRecord& record);
// Removes the pid file if it still names `pid` (never another server's).
void remove_server_record(const std::string& pid_file, pid_t pid);

// True while some process holds the serve lock.
bool serve_lock_held(const std::string& lock_file);

// True if `pid` is alive and runs an executable named lemonade-router (a
// server started by Lemonade's own CLI, which takes no lock of ours).
bool is_router_process(pid_t pid);

// The serve lock, held from acquire() until destruction. The descriptor is
// inheritable on purpose: the router child keeps the lock held after exec.
class ServeLock {
 public:
  // nullopt when another process holds it (or the file cannot be opened:
  // then `error` says why).
  static std::optional<ServeLock> try_acquire(const std::string& lock_file, std::string* error);
  ServeLock(ServeLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  ServeLock& operator=(ServeLock&&) = delete;
  ServeLock(const ServeLock&) = delete;
  ServeLock& operator=(const ServeLock&) = delete;
  ~ServeLock();

  int fd() const { return fd_; }

 private:
  explicit ServeLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace lemon::cli
