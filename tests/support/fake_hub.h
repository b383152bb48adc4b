// FakeHub: the fake-hub program (tests/fakes/hub_main.cpp) running as a
// child of the test on a free loopback port, over a private folder of
// repositories. Tests add files, point the router's HF_ENDPOINT at
// endpoint(), set fault knobs, read the request log, and wait for the hub to
// reach a state (a stalled transfer, N requests) instead of sleeping.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "support/temp_dir.h"

namespace lemon::testing {

class FakeHub {
 public:
  FakeHub();
  ~FakeHub();  // SIGKILLs and reaps the program
  FakeHub(const FakeHub&) = delete;
  FakeHub& operator=(const FakeHub&) = delete;

  // Files of repository "org/name" (may be called before or after start()).
  void add_file(const std::string& repo, const std::string& rel, const std::string& content);
  // `size` deterministic pseudo-random bytes from `seed`, written in pieces.
  void add_random_file(const std::string& repo, const std::string& rel, std::uint64_t size,
                       unsigned seed);
  // Makes the repository gated: requests need `Authorization: Bearer <token>`.
  void set_token(const std::string& repo, const std::string& token);

  // Starts the program; false (with a test failure) if it did not come up.
  bool start();
  std::string endpoint() const;  // "http://127.0.0.1:<port>"
  int port() const { return port_; }

  // POST /_fake/knobs {"rules": rules}; an empty array clears every knob.
  void set_knobs(const nlohmann::json& rules);
  nlohmann::json log() const;  // GET /_fake/log
  void clear_log();
  // The API listing of `repo` with blobs=true (sha, siblings with lfs).
  nlohmann::json listing(const std::string& repo) const;
  // Long-polls until a transfer of "org/name/file" stalls (knob
  // stall_after_bytes), or until `n` requests for `path` were seen.
  bool wait_stalled(const std::string& path) const;
  bool wait_requests(const std::string& path, int n) const;

  const std::string& root() const { return root_; }

 private:
  TempDir dir_{"lemon-hub"};
  std::string root_ = dir_.path().string();
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace lemon::testing
