// Fake nvidia-smi: answers the one query the router makes,
//   nvidia-smi --query-gpu=index,memory.total,memory.used --format=csv,noheader,nounits
// with the lines of the file named by $LEMON_FAKE_NVIDIA_SMI ("0, 24576, 1024":
// index, MiB total, MiB used), which a test rewrites to play a GPU whose
// memory another program takes (each run is counted in
// $LEMON_FAKE_NVIDIA_SMI_CALLS when set). Other arguments fail as the real one fails
// on an unknown query (exit 2, a message on stderr). It lives in its own
// directory (fakes/gpu), put on PATH only by the tests that want a GPU.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>

int main(int argc, char** argv) {
  constexpr std::string_view kQuery = "--query-gpu=index,memory.total,memory.used";
  constexpr std::string_view kFormat = "--format=csv,noheader,nounits";
  if (argc != 3 || argv[1] != kQuery || argv[2] != kFormat) {
    std::cerr << "fake nvidia-smi: only " << kQuery << " " << kFormat << " is supported\n";
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
  std::string line;
  while (std::getline(in, line)) {
    std::cout << line << '\n';
  }
  return 0;
}
