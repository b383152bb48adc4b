// RouterTest: the base fixture of the integration tests. Each test gets its
// own TestEnv (temp dir, cache, models) and its own router process, started
// with --port 0 --llamacpp cpu and the fakes injected, killed at teardown
// (which also checks that its backends exit). On failure the router's log is
// printed.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/raw_http.h"
#include "support/router_process.h"
#include "support/test_env.h"

namespace lemon::testing {

class RouterTest : public ::testing::Test {
 protected:
  void TearDown() override;

  // Starts the router (`--port 0 --llamacpp cpu` then `args`) with
  // env_.router_env() plus `extra_env`, and waits until it listens. Use as
  // ASSERT_NO_FATAL_FAILURE(start_router(...)).
  void start_router(const std::vector<std::string>& args = {},
                    const std::map<std::string, std::string>& extra_env = {});
  // Starts the router with exactly `args` (no defaults); does not wait.
  RouterProcess& launch_router(const std::vector<std::string>& args,
                               const std::map<std::string, std::string>& extra_env = {});
  RouterProcess& router() { return *router_; }
  // Folders the next router started gets read-only (RouterProcess).
  std::vector<std::string> read_only_dirs_;
  int port() const { return router_->port(); }

  // POST /api/v1/load and assert 200; with `pid`, also assert that /health
  // names a positive pid for the model and store it there. Fails fatally, so
  // call it as ASSERT_NO_FATAL_FAILURE(load_ok(...)): no caller goes on
  // without the pid it asked for.
  void load_ok(const std::string& model, pid_t* pid = nullptr);

  // Expects `r` to be the error envelope with `status`, `code` and (unless
  // empty) `param`; `what` names the case in failure messages.
  static void expect_error(const HttpReply& r, int status, const std::string& code,
                           const std::string& param, const std::string& what);
  // Expects no model loaded and no backend ever started.
  void expect_nothing_loaded();
  // POST audio/transcriptions (`path`) with `parts` as multipart/form-data.
  HttpReply transcribe(const std::vector<FormPart>& parts,
                       const std::string& path = "/api/v1/audio/transcriptions");

  TestEnv env_;
  std::unique_ptr<RouterProcess> router_;  // destroyed first
};

}  // namespace lemon::testing
