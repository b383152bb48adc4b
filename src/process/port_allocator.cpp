#include "lemon/process/port_allocator.h"
#include "lemon/core/mutex.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include <string>

#include "lemon/core/unique_fd.h"

namespace lemon {
namespace {

sockaddr_in loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

// True when 127.0.0.1:port can be bound right now (SO_REUSEADDR, as the
// backends themselves bind, so TIME_WAIT leftovers do not count as taken).
bool bindable(int port) {
  UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s.get() < 0) {
    return false;
  }
  int yes = 1;
  ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in addr = loopback(port);
  return ::bind(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

}  // namespace

PortAllocator::PortAllocator(int first_port, int start_offset, std::string lock_dir)
    : first_port_(first_port), lock_dir_(std::move(lock_dir)), next_(first_port + start_offset) {
  if (next_ > 32767 || next_ < first_port_) {
    next_ = first_port_;
  }
  if (!lock_dir_.empty()) {
    // Shared by every user's routers, like /tmp itself.
    if (::mkdir(lock_dir_.c_str(), 01777) == 0) {
      ::chmod(lock_dir_.c_str(), 01777);  // whatever the umask
    }
  }
}

PortAllocator::~PortAllocator() {
  for (const auto& [port, fd] : lock_fds_) {
    if (fd > 0) {
      ::close(fd);
    }
  }
}

int PortAllocator::reserve(int port) {
  if (lock_dir_.empty() || !locks_usable_) {
    return 0;
  }
  const std::string path = lock_dir_ + "/" + std::to_string(port) + ".lock";
  int fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);  // another user's file
  }
  if (fd < 0) {
    locks_usable_ = errno != EACCES && errno != ENOENT && errno != EROFS;
    return 0;  // no reservation possible: the bind check alone decides
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return -1;  // another router holds it
  }
  return fd;
}

Result<int> PortAllocator::acquire() {
  constexpr int kLastPort = 32767;  // stay below Linux's ephemeral range
  const int span = kLastPort - first_port_ + 1;
  MutexLock lock(mu_);
  for (int tried = 0; tried < span; ++tried) {
    int port = next_;
    next_ = next_ >= kLastPort ? first_port_ : next_ + 1;
    if (in_use_.count(port) != 0) {
      continue;
    }
    const int reservation = reserve(port);
    if (reservation < 0) {
      continue;
    }
    if (!bindable(port)) {
      if (reservation > 0) {
        ::close(reservation);
      }
      continue;
    }
    in_use_.insert(port);
    if (reservation > 0) {
      lock_fds_[port] = reservation;
    }
    return port;
  }
  return Error(ErrorCode::kSpawnFailed,
               "no free loopback port in " + std::to_string(first_port_) + "-32767");
}

void PortAllocator::release(int port) {
  MutexLock lock(mu_);
  in_use_.erase(port);
  if (auto it = lock_fds_.find(port); it != lock_fds_.end()) {
    ::close(it->second);  // the lock file stays; only the lock is dropped
    lock_fds_.erase(it);
  }
}

bool port_in_use(int port) {
  return !bindable(port);
}

}  // namespace lemon
