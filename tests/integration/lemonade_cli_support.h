// What the tests of Lemonade 11's command lines share: the real router with
// the fakes (RouterTest), and `lemonade` run against it with a private
// beacon port, so no test depends on UDP 13305 being free.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "support/cli_process.h"
#include "support/loopback_listener.h"
#include "support/router_fixture.h"

namespace lemon::testing {

class LemonadeCliTest : public RouterTest {
 protected:
  void SetUp() override {
    // A TCP port nobody listens on (bound, not listening): the client's
    // /live probe there is refused at once. Its UDP twin is the beacon port.
    closed_ = LoopbackListener::bound_only();
    ASSERT_GT(closed_.port(), 0);
    beacon_port_ = std::to_string(closed_.port());
  }

  // The router beaconing to this test's port.
  void start_beaconing_router(const std::vector<std::string>& args = {}) {
    start_router(args, {{"LEMONADE_BEACON_PORT", beacon_port_}});
  }

  // `lemonade args...` with the router's environment, the test's beacon
  // port, and `extra` (LEMONADE_PORT etc.).
  CliResult lemonade(const std::vector<std::string>& args,
                     const std::map<std::string, std::string>& extra = {},
                     const std::string& input = "") const {
    auto env = env_.router_env();
    env["LEMONADE_BEACON_PORT"] = beacon_port_;
    for (const auto& [k, v] : extra) {
      env[k] = v;
    }
    return run_cli(args, env, input, lemonade_binary());
  }
  // The same, told the router's port (no discovery).
  CliResult lemonade_at(const std::vector<std::string>& args,
                        const std::map<std::string, std::string>& extra = {},
                        const std::string& input = "") const {
    auto env = extra;
    env["LEMONADE_PORT"] = std::to_string(port());
    return lemonade(args, env, input);
  }

  LoopbackListener closed_;
  std::string beacon_port_;
};

inline bool has_text(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace lemon::testing
