#include "lemon/process/process_memory.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace lemon {
namespace {

std::int64_t resident_bytes(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/statm");
  long pages = 0;
  long resident = 0;
  if (!(in >> pages >> resident)) {
    return 0;
  }
  return static_cast<std::int64_t>(resident) * ::sysconf(_SC_PAGESIZE);
}

// The process group of `pid` from /proc/<pid>/stat (after the command name,
// which may hold spaces and parentheses), or -1.
long process_group(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string content;
  std::getline(stat, content);
  auto close = content.rfind(')');
  if (close == std::string::npos || close + 2 > content.size()) {
    return -1;
  }
  std::istringstream rest(content.substr(close + 2));
  char state = 0;
  long ppid = 0;
  long pgrp = -1;
  rest >> state >> ppid >> pgrp;
  return pgrp;
}

}  // namespace

std::int64_t group_resident_bytes(pid_t leader) {
  std::int64_t total = resident_bytes(leader);
  if (total == 0) {
    return 0;
  }
  if (DIR* d = ::opendir("/proc")) {
    while (dirent* e = ::readdir(d)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (end == e->d_name || *end != '\0' || pid == leader) {
        continue;
      }
      if (process_group(pid) == leader) {
        total += resident_bytes(pid);
      }
    }
    ::closedir(d);
  }
  return total;
}

}  // namespace lemon
