#include "support/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <fstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "lemon/core/error.h"

namespace lemon::testing {

namespace fs = std::filesystem;

TempDir::TempDir(const std::string& prefix) {
  std::string pattern = ::testing::TempDir();
  if (pattern.empty() || pattern.back() != '/') {
    pattern += '/';
  }
  pattern += prefix + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("mkdtemp failed for " + pattern + ": " + errno_message(errno));
  }
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

fs::path TempDir::write(const fs::path& rel, const std::string& content) const {
  fs::path p = path_ / rel;
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
  return p;
}

}  // namespace lemon::testing
