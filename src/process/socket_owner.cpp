#include "lemon/process/socket_owner.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace lemon {
namespace {

constexpr int kTcpListen = 10;  // TCP_LISTEN in the kernel's state numbering

// Inodes of TCP sockets in LISTEN state on `port`, asked of the kernel with
// sock_diag (netlink). Unlike parsing /proc/net/tcp, the cost does not grow
// with the number of connections on the machine: only listening sockets are
// dumped.
std::set<unsigned long> listening_inodes(int port) {
  std::set<unsigned long> inodes;
  int fd = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd < 0) {
    return inodes;
  }
  for (int family : {AF_INET, AF_INET6}) {
    struct {
      nlmsghdr header;
      inet_diag_req_v2 request;
    } msg{};
    msg.header.nlmsg_len = sizeof msg;
    msg.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    msg.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    msg.request.sdiag_family = static_cast<std::uint8_t>(family);
    msg.request.sdiag_protocol = IPPROTO_TCP;
    msg.request.idiag_states = 1u << kTcpListen;
    if (::send(fd, &msg, sizeof msg, 0) < 0) {
      continue;
    }
    char buf[16384];
    bool done = false;
    while (!done) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) {
        break;
      }
      // Walk the messages by offset, copying headers out (no unaligned casts).
      const auto len = static_cast<std::size_t>(n);
      std::size_t off = 0;
      while (off + sizeof(nlmsghdr) <= len) {
        nlmsghdr h{};
        std::memcpy(&h, buf + off, sizeof h);
        if (h.nlmsg_len < sizeof h || off + h.nlmsg_len > len || h.nlmsg_type == NLMSG_DONE ||
            h.nlmsg_type == NLMSG_ERROR) {
          done = true;
          break;
        }
        if (h.nlmsg_len >= NLMSG_LENGTH(sizeof(inet_diag_msg))) {
          inet_diag_msg d{};
          std::memcpy(&d, buf + off + NLMSG_HDRLEN, sizeof d);
          if (ntohs(d.id.idiag_sport) == port && d.idiag_inode != 0) {
            inodes.insert(d.idiag_inode);
          }
        }
        off += NLMSG_ALIGN(h.nlmsg_len);
      }
    }
  }
  ::close(fd);
  return inodes;
}

// The members of `inodes` that process `pid` has open.
std::set<unsigned long> held_of(pid_t pid, const std::set<unsigned long>& inodes) {
  std::set<unsigned long> held;
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return held;
  }
  char target[64];
  while (dirent* e = ::readdir(d)) {
    std::string link = dir + "/" + e->d_name;
    ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    if (n <= 0) {
      continue;
    }
    target[n] = '\0';
    unsigned long inode = 0;
    if (std::sscanf(target, "socket:[%lu]", &inode) == 1 && inodes.count(inode) != 0) {
      held.insert(inode);
    }
  }
  ::closedir(d);
  return held;
}

// Members of process group `pgid` other than its leader.
std::set<pid_t> group_members(pid_t pgid) {
  std::set<pid_t> members;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) {
    return members;
  }
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid == pgid) {
      continue;
    }
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string content;
    std::getline(stat, content);
    auto close = content.rfind(')');  // the command name may contain spaces
    if (close == std::string::npos) {
      continue;
    }
    std::istringstream rest(content.substr(close + 2));
    char state = 0;
    long ppid = 0, pgrp = 0;
    if (rest >> state >> ppid >> pgrp && pgrp == pgid) {
      members.insert(static_cast<pid_t>(pid));
    }
  }
  ::closedir(d);
  return members;
}

// The listening sockets on `port` that process group `pid` holds, and all of
// them.
struct PortListeners {
  std::set<unsigned long> all;
  std::set<unsigned long> held;
};

PortListeners port_listeners(pid_t pid, int port) {
  PortListeners out;
  out.all = listening_inodes(port);
  if (out.all.empty()) {
    return out;
  }
  out.held = held_of(pid, out.all);
  if (out.held.size() == out.all.size()) {
    return out;
  }
  for (pid_t member : group_members(pid)) {
    auto more = held_of(member, out.all);
    out.held.insert(more.begin(), more.end());
  }
  return out;
}

}  // namespace

bool process_listens_on(pid_t pid, int port) {
  return !port_listeners(pid, port).held.empty();
}

bool process_alone_listens_on(pid_t pid, int port) {
  auto l = port_listeners(pid, port);
  return !l.all.empty() && l.held.size() == l.all.size();
}

}  // namespace lemon
