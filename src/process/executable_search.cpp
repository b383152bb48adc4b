#include "lemon/process/executable_search.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace lemon {

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) {
    return {};
  }
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) {
      continue;  // an empty entry would mean the working directory: never
    }
    std::filesystem::path candidate = std::filesystem::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) {
      return candidate.string();
    }
  }
  return {};
}

}  // namespace lemon
