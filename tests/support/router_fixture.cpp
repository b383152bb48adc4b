#include "support/router_fixture.h"

#include <iostream>

#include "support/http_client.h"

namespace lemon::testing {

void RouterTest::TearDown() {
  if (router_ && HasFailure()) {
    std::cerr << "----- lemonade-router log -----\n"
              << router_->log_text() << "----- end of log -----\n";
  }
  router_.reset();
}

void RouterTest::start_router(const std::vector<std::string>& args,
                              const std::map<std::string, std::string>& extra_env) {
  std::vector<std::string> all = {"--port", "0", "--llamacpp", "cpu"};
  all.insert(all.end(), args.begin(), args.end());
  launch_router(all, extra_env);
  ASSERT_GT(router_->wait_listening(), 0) << "the router did not start:\n" << router_->log_text();
}

RouterProcess& RouterTest::launch_router(const std::vector<std::string>& args,
                                         const std::map<std::string, std::string>& extra_env) {
  auto env = env_.router_env();
  for (const auto& [k, v] : extra_env) {
    env[k] = v;
  }
  router_.reset();
  router_ = std::make_unique<RouterProcess>(args, env);
  return *router_;
}

int RouterTest::load_ok(const std::string& model) {
  HttpReply r = load(port(), model);
  EXPECT_EQ(r.status, 200) << model << ": " << r.error << r.body;
  return loaded_pid(port(), model);
}

}  // namespace lemon::testing
