// Fake nvidia-smi: answers the three queries the router makes, each with
// --format=csv,noheader,nounits:
//   --query-gpu=index,memory.total,memory.used
//     the lines of the file named by $LEMON_FAKE_NVIDIA_SMI ("0, 24576, 1024":
//     index, MiB total, MiB used), which a test rewrites to play a GPU whose
//     memory another program takes;
//   --query-gpu=index,uuid
//     "<index>, GPU-fake-<index>" for each GPU of that file;
//   --query-compute-apps=pid,gpu_uuid,used_memory
//     the lines of $LEMON_FAKE_NVIDIA_SMI_APPS ("1234, GPU-fake-0, 512": pid,
//     GPU, MiB), none when it is unset or missing, as the real one lists no
//     process then.
// Each run is counted in $LEMON_FAKE_NVIDIA_SMI_CALLS when set. Other
// arguments fail as the real one fails on an unknown query (exit 2, a message
// on stderr). It lives in its own directory (fakes/gpu), put on PATH only by
// the tests that want a GPU.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>

namespace {

constexpr std::string_view kMemoryQuery = "--query-gpu=index,memory.total,memory.used";
constexpr std::string_view kUuidQuery = "--query-gpu=index,uuid";
constexpr std::string_view kAppsQuery = "--query-compute-apps=pid,gpu_uuid,used_memory";
constexpr std::string_view kFormat = "--format=csv,noheader,nounits";

}  // namespace

int main(int argc, char** argv) {
  const std::string_view query = argc == 3 ? std::string_view(argv[1]) : std::string_view();
  if (argc != 3 || argv[2] != kFormat ||
      (query != kMemoryQuery && query != kUuidQuery && query != kAppsQuery)) {
    std::cerr << "fake nvidia-smi: only " << kMemoryQuery << ", " << kUuidQuery << " or "
              << kAppsQuery << " with " << kFormat << " is supported\n";
    return 2;
  }
  // Each run is counted in $LEMON_FAKE_NVIDIA_SMI_CALLS, when set, a line a
  // run (a test checks that a load on the CPU never runs it).
  if (const char* calls = std::getenv("LEMON_FAKE_NVIDIA_SMI_CALLS")) {
    std::ofstream(calls, std::ios::app) << "run\n";
  }
  const char* file = std::getenv("LEMON_FAKE_NVIDIA_SMI");
  std::ifstream in(file != nullptr ? file : "");
  if (!in) {
    // What the real one says when the driver cannot be reached.
    std::cout << "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n";
    return 9;
  }
  if (query == kAppsQuery) {
    const char* apps = std::getenv("LEMON_FAKE_NVIDIA_SMI_APPS");
    std::ifstream listed(apps != nullptr ? apps : "");
    std::string line;
    while (std::getline(listed, line)) {
      std::cout << line << '\n';
    }
    return 0;
  }
  std::string line;
  while (std::getline(in, line)) {
    if (query == kUuidQuery) {
      std::istringstream fields(line);
      int index = -1;
      if (fields >> index) {
        std::cout << index << ", GPU-fake-" << index << '\n';
      }
    } else {
      std::cout << line << '\n';
    }
  }
  return 0;
}
