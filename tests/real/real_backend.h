// The real-backend tier (label `real`, issue #31): the router against the
// real programs named by LEMON_REAL_LLAMA_SERVER, LEMON_REAL_WHISPER_SERVER
// and LEMON_REAL_SD_SERVER, built outside the repository
// (docs/testing.md). A test whose program is not named is skipped, with a
// line saying so; CI names none.
#pragma once

#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/router_fixture.h"

namespace lemon::testing {

// The program a variable names, or "" (the test then skips).
inline std::string real_program(const char* variable) {
  const char* v = std::getenv(variable);
  return v != nullptr ? std::string(v) : std::string();
}

// The folder of the tiny random-weight models: LEMON_REAL_MODELS_DIR, else
// ../shared/models beside the repository.
inline std::string real_models_dir() {
  const char* dir = std::getenv("LEMON_REAL_MODELS_DIR");
  return dir != nullptr ? std::string(dir) : std::string(LEMON_SOURCE_DIR) + "/../shared/models";
}

inline std::string real_model_file(const std::string& name) {
  return real_models_dir() + "/" + name;
}

// A llama.cpp source tree (for gguf-py and its vocabularies):
// LEMON_REAL_LLAMA_SRC, else the tree LEMON_REAL_LLAMA_SERVER was built in
// (<tree>/build/bin/llama-server); "" when neither has gguf-py.
inline std::string real_llama_source() {
  namespace fs = std::filesystem;
  std::string tree;
  if (const char* src = std::getenv("LEMON_REAL_LLAMA_SRC")) {
    tree = src;
  } else if (const char* server = std::getenv("LEMON_REAL_LLAMA_SERVER")) {
    tree = fs::path(server).parent_path().parent_path().parent_path().string();
  }
  return !tree.empty() && fs::is_directory(fs::path(tree) / "gguf-py") ? tree : std::string();
}

// The Python that runs tests/models/ (LEMON_PYTHON, else Debian's
// /usr/bin/python3, which has python3-numpy).
inline std::string real_python() {
  const char* p = std::getenv("LEMON_PYTHON");
  return p != nullptr ? std::string(p) : std::string("/usr/bin/python3");
}

// Runs `argv` (PATH searched, no shell, stdout and stderr to /dev/null) and
// returns its exit status, or -1 if it could not start.
inline int run_program(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", 1 /* O_WRONLY */, 0);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return -1;
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A test of the router against the real program that `variable` names,
// handed to the router through the recipe's `bin_variable`. Skipped, with a
// line saying so, when the variable is not set.
class RealProgramTest : public RouterTest {
 protected:
  RealProgramTest(std::string variable, std::string program, std::string bin_variable)
      : variable_(std::move(variable)),
        program_name_(std::move(program)),
        bin_variable_(std::move(bin_variable)) {}

  void SetUp() override {
    program_ = real_program(variable_.c_str());
    if (program_.empty()) {
      GTEST_SKIP() << variable_ << " is not set: no real " << program_name_ << " to test against";
    }
  }
  // The router with the real program in place of the fake.
  void start_real_router(const std::vector<std::string>& args = {},
                         std::map<std::string, std::string> env = {}) {
    env[bin_variable_] = program_;
    start_router(args, env);
  }

  const std::string variable_;
  const std::string program_name_;
  const std::string bin_variable_;
  std::string program_;  // the real program's path, once SetUp() ran
};

class RealLlamaTest : public RealProgramTest {
 protected:
  RealLlamaTest()
      : RealProgramTest("LEMON_REAL_LLAMA_SERVER", "llama-server", "LEMONADE_LLAMACPP_CPU_BIN") {}
  // Says plainly, before any load, when the tiny models are not there (a
  // clone without ../shared beside it), rather than failing load by load.
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(RealProgramTest::SetUp());
    if (IsSkipped()) {
      return;
    }
    ASSERT_TRUE(std::filesystem::is_regular_file(real_model_file("tiny-llama-chat.gguf")))
        << "the real llama-server tests need the tiny models, and "
        << real_model_file("tiny-llama-chat.gguf")
        << " is missing: set LEMON_REAL_MODELS_DIR to the folder that holds them "
           "(../shared/models beside the repository by default)";
  }
  // user.<key>: the tiny chat model on the real llama-server.
  void add_tiny_chat(const std::string& key) {
    env_.add_user_model(key, {{"checkpoint", real_model_file("tiny-llama-chat.gguf")},
                              {"recipe", "llamacpp"},
                              {"source", "local_path"}});
  }
};

// The router against a real whisper-server and tiny random-weight whisper
// models written at test time by tests/models/make_tiny_whisper.py (Debian's
// python3 with python3-numpy).
class RealWhisperTest : public RealProgramTest {
 protected:
  RealWhisperTest()
      : RealProgramTest("LEMON_REAL_WHISPER_SERVER", "whisper-server",
                        "LEMONADE_WHISPERCPP_CPU_BIN") {}
  // user.<key>: a tiny whisper model (a different one per seed), or one of
  // the shape `shape` gives (make_tiny_whisper.py's options).
  void add_tiny_whisper(const std::string& key, int seed = 31,
                        const std::vector<std::string>& shape = {}) {
    const std::string path = env_.models_dir() + "/" + key + ".bin";
    std::vector<std::string> argv = {
        real_python(), std::string(LEMON_SOURCE_DIR) + "/tests/models/make_tiny_whisper.py", path,
        "--seed", std::to_string(seed)};
    argv.insert(argv.end(), shape.begin(), shape.end());
    ASSERT_EQ(run_program(argv), 0)
        << "tests/models/make_tiny_whisper.py failed: it needs python3 with numpy "
           "(LEMON_PYTHON, else /usr/bin/python3)";
    env_.add_user_model(key,
                        {{"checkpoint", path}, {"recipe", "whispercpp"}, {"source", "local_path"}});
  }
};

// The router against a real sd-server and a random-weight model of the
// smallest architecture stable-diffusion.cpp loads (SDXS), written at test
// time by tests/models/make_sdxs_like.py (docs/testing.md).
class RealSdTest : public RealProgramTest {
 protected:
  RealSdTest() : RealProgramTest("LEMON_REAL_SD_SERVER", "sd-server", "LEMONADE_SDCPP_CPU_BIN") {}
};

}  // namespace lemon::testing
