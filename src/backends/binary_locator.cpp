#include "lemon/backends/binary_locator.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace lemon {
namespace fs = std::filesystem;

namespace {

bool is_executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

std::string upper_without_dashes(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '-'), s.end());
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

}  // namespace

std::string binary_env_var(const BinaryQuery& query) {
  std::string name = "LEMONADE_" + upper_without_dashes(query.recipe);
  if (!query.backend.empty()) {
    name += "_" + upper_without_dashes(query.backend);
  }
  return name + "_BIN";
}

Result<std::string> locate_backend_binary(const BinaryQuery& query, const std::string& cache_dir) {
  const std::string var = binary_env_var(query);
  if (const char* value = std::getenv(var.c_str()); value != nullptr && *value != '\0') {
    fs::path p(value);
    if (is_executable_file(p)) {
      return fs::absolute(p).string();
    }
    return Error(ErrorCode::kBackendBinaryMissing,
                 var + " is set to '" + std::string(value) + "', which is not an executable file");
  }
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string_view rest(path);
    while (!rest.empty()) {
      auto colon = rest.find(':');
      std::string_view dir = rest.substr(0, colon);
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      if (dir.empty()) {
        continue;
      }
      fs::path candidate = fs::path(dir) / query.binary;
      if (is_executable_file(candidate)) {
        return fs::absolute(candidate).string();
      }
    }
  }
  fs::path install = fs::path(cache_dir) / "bin" / query.recipe;
  if (!query.backend.empty()) {
    install /= query.backend;
  }
  std::error_code ec;
  if (fs::is_directory(install, ec)) {
    for (auto it = fs::recursive_directory_iterator(install, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->path().filename() == query.binary && is_executable_file(it->path())) {
        return it->path().string();
      }
    }
  }
  return Error(ErrorCode::kBackendBinaryMissing, query.binary + " not found: set " + var +
                                                     ", put it on PATH, or install it under " +
                                                     install.string());
}

}  // namespace lemon
