// FlmInventory: which FLM checkpoints are installed, as FastFlowLM itself
// reports them (`flm list --filter installed --quiet`, run with an argv, no
// shell). FLM keeps its own model files, so this is how the catalogue tells
// "downloaded" for flm models. No flm binary means nothing is installed.
// Answers are cached for `ttl` so GET /models does not spawn a process each
// time.
//
// Thread-safety: installed() may be called from any thread; concurrent
// callers during a refresh wait for the same answer.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "lemon/core/mutex.h"
#include "lemon/process/process_launcher.h"

namespace lemon {

class FlmInventory {
 public:
  FlmInventory(ProcessLauncher& launcher, std::string cache_dir,
               std::chrono::seconds ttl = std::chrono::seconds(10));

  std::vector<std::string> installed();

 private:
  std::vector<std::string> query();

  ProcessLauncher& launcher_;
  const std::string cache_dir_;
  const std::chrono::seconds ttl_;
  Mutex mu_;
  std::vector<std::string> cached_ LEMON_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point fetched_ LEMON_GUARDED_BY(mu_){};
  bool valid_ LEMON_GUARDED_BY(mu_) = false;
};

}  // namespace lemon
