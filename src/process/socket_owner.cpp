#include "lemon/process/socket_owner.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace lemon {
namespace {

constexpr int kTcpListen = 0x0A;

// Inodes of sockets in LISTEN state on `port`, from /proc/net/tcp{,6}.
std::set<unsigned long> listening_inodes(int port) {
  std::set<unsigned long> inodes;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retr;
      unsigned long uid = 0, timeout = 0, inode = 0;
      if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retr >> uid >>
            timeout >> inode)) {
        continue;
      }
      auto colon = local.rfind(':');
      if (colon == std::string::npos) {
        continue;
      }
      int local_port = static_cast<int>(std::stoul(local.substr(colon + 1), nullptr, 16));
      int st = static_cast<int>(std::stoul(state, nullptr, 16));
      if (local_port == port && st == kTcpListen && inode != 0) {
        inodes.insert(inode);
      }
    }
  }
  return inodes;
}

bool holds_any(pid_t pid, const std::set<unsigned long>& inodes) {
  std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return false;
  }
  bool found = false;
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
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
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

}  // namespace

bool process_listens_on(pid_t pid, int port) {
  auto inodes = listening_inodes(port);
  if (inodes.empty()) {
    return false;
  }
  if (holds_any(pid, inodes)) {
    return true;
  }
  for (pid_t member : group_members(pid)) {
    if (holds_any(member, inodes)) {
      return true;
    }
  }
  return false;
}

}  // namespace lemon
