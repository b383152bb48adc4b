// FakeHub: the fake-hub program (tests/fakes/fake_hub.cpp, README.md there)
// running as a child of the test on a free loopback port, over a folder of
// repositories (ROOT/<org>/<name>/...). Tests add files, point the router's
// HF_ENDPOINT at endpoint(), set fault knobs, read the request log, and wait
// for the hub to reach a state (a stalled transfer, N requests) instead of
// sleeping. Control calls go through cpp-httplib's client; a failed control
// call is a test failure (ADD_FAILURE / EXPECT).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "support/temp_dir.h"
#include "support/test_env.h"

namespace lemon::testing {

class FakeHub {
 public:
  FakeHub();                           // over a fresh temporary folder, removed at the end
  explicit FakeHub(std::string root);  // over `root` (created if missing, kept at the end)
  ~FakeHub();                          // SIGKILLs and reaps the program
  FakeHub(const FakeHub&) = delete;
  FakeHub& operator=(const FakeHub&) = delete;

  // Files of repository "org/name" (before or after start(); a changed file
  // changes the repository's commit). Returns the file's path on disk.
  std::string add_file(const std::string& repo, const std::string& rel, const std::string& content);
  // `size` deterministic pseudo-random bytes from `seed`, written 1 MiB at a time.
  std::string add_random_file(const std::string& repo, const std::string& rel, std::uint64_t size,
                              unsigned seed);
  // Makes the repository gated: requests need `Authorization: Bearer <token>`.
  void set_token(const std::string& repo, const std::string& token);
  // Where add_file() puts repo/rel.
  std::string file_path(const std::string& repo, const std::string& rel) const;

  // Starts the program on port 0 and reads its port from its first stdout
  // line; false (with a test failure) if it did not come up. Idempotent.
  bool start();
  std::string endpoint() const;  // "http://127.0.0.1:<port>"
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& root() const { return root_; }

  // POST /_fake/knobs {"rules": rules}: replaces every rule; an empty array
  // clears them (and releases stalled transfers). Rules are described in
  // tests/fakes/README.md, e.g.
  //   {{{"path", "org/m/x.gguf"}, {"stall_after_bytes", 4096}}}
  //   {{{"path", "org/m"}, {"api_status", 500}, {"times", 1}}}
  void set_knobs(const nlohmann::json& rules);
  // GET /_fake/log: [{"method","path","query","range","authorization_present",
  // "bytes_sent","status"}...] in arrival order.
  nlohmann::json log() const;
  void clear_log();  // also restarts the counts of wait_requests()
  // The API listing of `repo` with blobs=true (sha, siblings with blobId,
  // size, lfs). It shows up in the request log like any other request.
  nlohmann::json listing(const std::string& repo) const;
  // Long-polls until a transfer of "org/name/file" is stalled (knob
  // stall_after_bytes), or until `n` requests for `path` ("org/name/file", or
  // "org/name" for the listing) were seen since the last clear_log().
  bool wait_stalled(const std::string& path, std::chrono::milliseconds timeout = kWait) const;
  bool wait_requests(const std::string& path, int n,
                     std::chrono::milliseconds timeout = kWait) const;

 private:
  bool wait(const std::string& event, const std::string& path, int n,
            std::chrono::milliseconds timeout) const;

  std::unique_ptr<TempDir> dir_;
  std::string root_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace lemon::testing
