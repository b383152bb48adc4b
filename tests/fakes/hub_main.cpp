// fake-hub: a loopback imitation of the Hugging Face hub for the model-store
// tests and the download benchmark (fake_hub.h, README.md in this directory).
//
//   fake-hub --root DIR [--host 127.0.0.1] [--port 0]
#include <charconv>
#include <cstdio>
#include <string>
#include <string_view>

#include "fake_hub.h"

namespace {

int usage(const char* why) {
  if (why != nullptr) {
    std::fprintf(stderr, "fake-hub: %s\n", why);
  }
  std::fprintf(stderr, "usage: fake-hub --root DIR [--host 127.0.0.1] [--port 0]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  fake::HubOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      usage(nullptr);
      return 0;
    }
    if (arg != "--root" && arg != "--host" && arg != "--port") {
      std::fprintf(stderr, "fake-hub: unknown argument %s\n", argv[i]);
      return usage(nullptr);
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "fake-hub: %s needs a value\n", argv[i]);
      return usage(nullptr);
    }
    const std::string value = argv[++i];
    if (arg == "--root") {
      options.root = value;
    } else if (arg == "--host") {
      options.host = value;
    } else {
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), options.port);
      if (ec != std::errc() || end != value.data() + value.size() || options.port < 0 ||
          options.port > 65535) {
        return usage("--port needs a number from 0 to 65535");
      }
    }
  }
  if (options.root.empty()) {
    return usage("--root is required");
  }
  return fake::run_hub(options);
}
