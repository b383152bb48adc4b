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
  router_ = std::make_unique<RouterProcess>(args, env, read_only_dirs_);
  return *router_;
}

void RouterTest::load_ok(const std::string& model, pid_t* pid) {
  HttpReply r = load(port(), model);
  ASSERT_EQ(r.status, 200) << model << ": " << r.error << r.body;
  if (pid != nullptr) {
    const int found = loaded_pid(port(), model);
    ASSERT_GT(found, 1) << model << " has no pid in /health: " << health(port()).dump();
    *pid = found;
  }
}

void RouterTest::expect_error(const HttpReply& r, int status, const std::string& code,
                              const std::string& param, const std::string& what) {
  EXPECT_EQ(r.status, status) << what << ": " << r.error << r.body;
  auto j = r.json();
  ASSERT_TRUE(is_error_envelope(j)) << what << ": " << r.body;
  EXPECT_EQ(j["error"]["code"], code) << what << ": " << r.body;
  if (!param.empty()) {
    EXPECT_EQ(j["error"]["param"], param) << what << ": " << r.body;
  }
}

void RouterTest::expect_nothing_loaded() {
  EXPECT_TRUE(health(port())["all_models_loaded"].empty());
  EXPECT_EQ(router().count_log("starting "), 0) << "a backend was started";
}

HttpReply RouterTest::transcribe(const std::vector<FormPart>& parts, const std::string& path) {
  return raw_request(port(), "POST", path, {{"Content-Type", multipart_content_type()}},
                     multipart_body(parts));
}

}  // namespace lemon::testing
