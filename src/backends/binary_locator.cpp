#include "lemon/backends/binary_locator.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "lemon/core/text.h"

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

namespace {

// `name` in one of PATH's folders; "" when none has it.
std::string search_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) {
    return "";
  }
  for (std::string_view dir : split(path, ':')) {
    if (dir.empty()) {
      continue;
    }
    fs::path candidate = fs::path(dir) / name;
    if (is_executable_file(candidate)) {
      return fs::absolute(candidate).string();
    }
  }
  return "";
}

// `query`'s binary under `install`, searched recursively; "" when absent.
std::string search_install(const BinaryQuery& query, const fs::path& install) {
  std::error_code ec;
  if (fs::is_directory(install, ec)) {
    for (auto it = fs::recursive_directory_iterator(install, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->path().filename() == query.binary && is_executable_file(it->path())) {
        return it->path().string();
      }
    }
  }
  return "";
}

}  // namespace

Result<std::string> locate_backend_binary(const BinaryQuery& query, const std::string& cache_dir,
                                          const BinarySettings& settings) {
  const std::string var = binary_env_var(query);
  if (auto it = settings.paths.find(var); it != settings.paths.end()) {
    if (is_executable_file(it->second)) {
      return it->second;
    }
    return Error(ErrorCode::kBackendBinaryMissing,
                 var + " (or its *_bin key in config.json) names '" + it->second +
                     "', which is not an executable file");
  }
  if (const char* value = std::getenv(var.c_str()); value != nullptr && *value != '\0') {
    fs::path p(value);
    if (is_executable_file(p)) {
      return fs::absolute(p).string();
    }
    return Error(ErrorCode::kBackendBinaryMissing,
                 var + " is set to '" + std::string(value) + "', which is not an executable file");
  }
  fs::path install = fs::path(cache_dir) / "bin" / query.recipe;
  if (!query.backend.empty()) {
    install /= query.backend;
  }
  const bool installed_first = settings.installed_first.contains(query.recipe);
  for (int pass = 0; pass < 2; ++pass) {
    const bool install_pass = (pass == 0) == installed_first;
    std::string found = install_pass ? search_install(query, install) : search_path(query.binary);
    if (!found.empty()) {
      return found;
    }
  }
  return Error(ErrorCode::kBackendBinaryMissing, query.binary + " not found: set " + var +
                                                     ", put it on PATH, or install it under " +
                                                     install.string());
}

}  // namespace lemon
