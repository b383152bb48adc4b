// The real-backend tier (label `real`, issue #31): the router against the
// real programs named by LEMON_REAL_LLAMA_SERVER, LEMON_REAL_WHISPER_SERVER
// and LEMON_REAL_SD_SERVER, built outside the repository
// (docs/testing.md). A test whose program is not named is skipped, with a
// line saying so; CI names none.
#pragma once

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "support/router_fixture.h"

namespace lemon::testing {

// The program a variable names, or "" (the test then skips).
inline std::string real_program(const char* variable) {
  const char* v = std::getenv(variable);
  return v != nullptr ? std::string(v) : std::string();
}

// The tiny random-weight models of ../shared/models (or
// LEMON_REAL_MODELS_DIR).
inline std::string real_model_file(const std::string& name) {
  const char* dir = std::getenv("LEMON_REAL_MODELS_DIR");
  return (dir != nullptr ? std::string(dir) : std::string(LEMON_SOURCE_DIR) + "/../shared/models") +
         "/" + name;
}

class RealLlamaTest : public RouterTest {
 protected:
  void SetUp() override {
    llama_server_ = real_program("LEMON_REAL_LLAMA_SERVER");
    if (llama_server_.empty()) {
      GTEST_SKIP() << "LEMON_REAL_LLAMA_SERVER is not set: no real llama-server to test against";
    }
  }
  // user.<key>: the tiny chat model on the real llama-server.
  void add_tiny_chat(const std::string& key) {
    env_.add_user_model(key, {{"checkpoint", real_model_file("tiny-llama-chat.gguf")},
                              {"recipe", "llamacpp"},
                              {"source", "local_path"}});
  }
  // The router with the real llama-server in place of the fake.
  void start_real_router(const std::vector<std::string>& args = {}) {
    start_router(args, {{"LEMONADE_LLAMACPP_CPU_BIN", llama_server_}});
  }

  std::string llama_server_;
};

}  // namespace lemon::testing
