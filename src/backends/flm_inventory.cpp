#include "lemon/backends/flm_inventory.h"
#include "lemon/core/mutex.h"

#include "lemon/backends/binary_locator.h"
#include "lemon/core/log.h"

namespace lemon {

FlmInventory::FlmInventory(ProcessLauncher& launcher, std::string cache_dir,
                           std::chrono::seconds ttl)
    : launcher_(launcher), cache_dir_(std::move(cache_dir)), ttl_(ttl) {}

std::vector<std::string> FlmInventory::installed() {
  MutexLock lock(mu_);
  auto now = std::chrono::steady_clock::now();
  if (!valid_ || now - fetched_ >= ttl_) {
    cached_ = query();
    fetched_ = now;
    valid_ = true;
  }
  return cached_;
}

std::vector<std::string> FlmInventory::query() {
  auto exe = locate_backend_binary({"flm", "", "flm"}, cache_dir_);
  if (!exe.ok()) {
    return {};
  }
  SpawnSpec spec;
  spec.executable = *exe;
  spec.args = {"list", "--filter", "installed", "--quiet"};
  spec.log_tag = "flm list";
  spec.kept_lines = 4096;
  auto child = launcher_.spawn(spec);
  if (!child.ok()) {
    logger("backend")->warn("cannot run flm list: {}", child.error().message());
    return {};
  }
  if (!(*child)->wait_exit_until(std::chrono::steady_clock::now() + std::chrono::seconds(10))) {
    (*child)->terminate(std::chrono::milliseconds(0));
    logger("backend")->warn("flm list did not finish within 10 s");
    return {};
  }
  std::vector<std::string> out;
  for (auto& line : (*child)->last_lines(spec.kept_lines)) {
    auto start = line.find_first_not_of(" \t");
    auto end = line.find_last_not_of(" \t\r");
    if (start != std::string::npos) {
      out.push_back(line.substr(start, end - start + 1));
    }
  }
  return out;
}

}  // namespace lemon
