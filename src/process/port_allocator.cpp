#include "lemon/process/port_allocator.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include <string>

namespace lemon {
namespace {

class Socket {
 public:
  Socket() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {}
  ~Socket() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

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
  Socket s;
  if (s.fd() < 0) {
    return false;
  }
  int yes = 1;
  ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in addr = loopback(port);
  return ::bind(s.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

}  // namespace

PortAllocator::PortAllocator(int first_port, int start_offset)
    : first_port_(first_port), next_(first_port + start_offset) {
  if (next_ > 32767 || next_ < first_port_) {
    next_ = first_port_;
  }
}

Result<int> PortAllocator::acquire() {
  constexpr int kLastPort = 32767;  // stay below Linux's ephemeral range
  const int span = kLastPort - first_port_ + 1;
  std::lock_guard lock(mu_);
  for (int tried = 0; tried < span; ++tried) {
    int port = next_;
    next_ = next_ >= kLastPort ? first_port_ : next_ + 1;
    if (in_use_.count(port) == 0 && bindable(port)) {
      in_use_.insert(port);
      return port;
    }
  }
  return Error(ErrorCode::kSpawnFailed,
               "no free loopback port in " + std::to_string(first_port_) + "-32767");
}

void PortAllocator::release(int port) {
  std::lock_guard lock(mu_);
  in_use_.erase(port);
}

bool port_in_use(int port) {
  return !bindable(port);
}

}  // namespace lemon
