// Remote models (issue #30 §3) with two or three real routers on loopback:
// router A serves "user.far" from routers B1 and B2, which serve "user.a"
// with the fake llama-server. Failover when one is killed, the circuit
// breaker and its recovery, no replay of a started stream, least_busy,
// discovery, keys from a variable, and the model lists.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_OPENSSL_SUPPORT
#endif
#include <httplib.h>

#include "support/http_client.h"
#include "support/prometheus_text.h"
#include "support/raw_client.h"
#include "support/raw_http.h"
#include "support/router_fixture.h"
#include "support/self_signed.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

// A router on loopback serving "user.a" (the fake llama-server).
struct OtherRouter {
  explicit OtherRouter(std::vector<std::string> extra = {}, int fixed_port = 0) {
    model_file = env.add_llm("a");
    start(std::move(extra), fixed_port);
  }
  void start(std::vector<std::string> extra, int fixed_port) {
    std::vector<std::string> args = {"--port", std::to_string(fixed_port), "--llamacpp", "cpu"};
    args.insert(args.end(), extra.begin(), extra.end());
    process = std::make_unique<RouterProcess>(args, env.router_env());
    port = process->wait_listening();
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port) + "/api/v1"; }
  TestEnv env;
  std::string model_file;
  std::unique_ptr<RouterProcess> process;
  int port = 0;
};

json endpoint(const std::string& base_url) {
  return {{"base_url", base_url}};
}

// The remote model's entry in A's /health.
json remote_entry(int port, const std::string& model) {
  const json h = health(port);  // the range below must not outlive it
  for (const auto& m : h["remote_models"]) {
    if (m["model_name"] == model) {
      return m;
    }
  }
  return nullptr;
}

json endpoint_figures(int port, const std::string& model, std::size_t index) {
  json m = remote_entry(port, model);
  return m.is_null() ? json() : m["endpoints"][index];
}

class RemoteTest : public RouterTest {
 protected:
  // A serves "user.far" from `endpoints` through config.json.
  // `remote` adds to (or overrides) the section: health_interval, retry_after.
  void start_a(const json& endpoints, const std::string& policy = "failover",
               const std::vector<std::string>& args = {},
               std::map<std::string, std::string> env = {}, const json& remote = json::object()) {
    json section = {
        {"health_interval", 0.1},
        {"models",
         {{"far", {{"checkpoint", "user.a"}, {"policy", policy}, {"endpoints", endpoints}}}}}};
    section.update(remote);
    env_.write_config({{"remote", section}});
    auto config = env_.config_env();
    env.insert(config.begin(), config.end());
    ASSERT_NO_FATAL_FAILURE(start_router(args, env));
  }
};

TEST_F(RemoteTest, AModelInUserModelsIsServedByAnotherRouterUnderItsOwnName) {
  OtherRouter b;
  ASSERT_GT(b.port, 0) << b.process->log_text();
  env_.add_user_model("far", {{"recipe", "remote"},
                              {"checkpoint", "user.a"},
                              {"endpoints", json::array({endpoint(b.base_url())})}});
  env_.write_config({{"remote", {{"health_interval", 0.1}}}});
  ASSERT_NO_FATAL_FAILURE(start_router({}, env_.config_env()));

  HttpReply r = chat(port(), "user.far");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(r.json()["choices"][0]["message"]["content"].get<std::string>().empty());
  // B loaded its own model; the fake was asked for it by B's name for it.
  auto on_b = loaded_entry(health(b.port), "user.a");
  ASSERT_TRUE(on_b.has_value());
  EXPECT_EQ(fake_state((*on_b)["backend_url"])["last_request"]["model"], "user.a");
  // A holds no slot for it, and shows it with its endpoint.
  const json h = health(port());
  EXPECT_TRUE(h["all_models_loaded"].empty()) << h.dump();
  json far = remote_entry(port(), "user.far");
  ASSERT_FALSE(far.is_null()) << h.dump();
  EXPECT_EQ(far["checkpoint"], "user.a");
  EXPECT_EQ(far["origin"], "user_models.json");
  EXPECT_EQ(far["endpoints"][0]["base_url"], b.base_url());
  EXPECT_EQ(far["endpoints"][0]["state"], "healthy");
  EXPECT_EQ(far["endpoints"][0]["requests"], 1);

  // A stream passes through whole.
  HttpReply s = http_post(port(), "/api/v1/chat/completions", stream_body("user.far", 3, 0));
  ASSERT_EQ(s.status, 200) << s.body;
  EXPECT_NE(s.body.find("data: [DONE]"), std::string::npos) << s.body;

  // Listed as a remote model; never loaded here.
  bool listed = false;
  const json models = http_get(port(), "/api/v1/models").json();
  for (const auto& m : models["data"]) {
    if (m["id"] == "far") {
      listed = true;
      EXPECT_EQ(m["recipe"], "remote");
      EXPECT_EQ(m["downloaded"], true);
      EXPECT_EQ(m["remote"]["endpoints"][0], b.base_url());
    }
  }
  EXPECT_TRUE(listed);
  expect_error(load(port(), "user.far"), 400, "model_served_remotely", "model", "/load");
  expect_error(http_post(port(), "/api/v1/unload", json{{"model_name", "user.far"}}), 400,
               "model_served_remotely", "model_name", "/unload");
  expect_error(http_post(port(), "/api/v1/pull", json{{"model_name", "user.far"}}), 400,
               "model_served_remotely", "model", "/pull");
  EXPECT_TRUE(health(port())["all_models_loaded"].empty());
  // Deleting it takes back its registration; there are no files. The
  // monitor drops what user_models.json no longer holds, before any request
  // for it.
  HttpReply deleted = http_post(port(), "/api/v1/delete", json{{"model_name", "user.far"}});
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_TRUE(eventually([&] { return remote_entry(port(), "user.far").is_null(); }))
      << health(port()).dump();
  EXPECT_EQ(chat(port(), "user.far").status, 404);
}

TEST_F(RemoteTest, AKilledEndpointIsSkippedWhileDown) {
  OtherRouter b1;
  OtherRouter b2;
  ASSERT_GT(b1.port, 0);
  ASSERT_GT(b2.port, 0);
  // A down endpoint is skipped for 30 s here, far longer than this test.
  ASSERT_NO_FATAL_FAILURE(start_a({endpoint(b1.base_url()), endpoint(b2.base_url())}, "failover",
                                  {}, {}, {{"retry_after", 30}}));
  ASSERT_EQ(chat(port(), "user.far").status, 200);
  EXPECT_EQ(endpoint_figures(port(), "user.far", 0)["requests"], 1);
  EXPECT_EQ(endpoint_figures(port(), "user.far", 1)["requests"], 0);

  b1.process->kill_and_reap();
  HttpReply failed_over = chat(port(), "user.far");
  ASSERT_EQ(failed_over.status, 200) << failed_over.body;
  json first = endpoint_figures(port(), "user.far", 0);
  EXPECT_EQ(first["state"], "down") << first.dump();
  EXPECT_FALSE(first["last_error"].is_null());
  // The circuit is open: the next request goes straight to B2. (A health
  // check may have found B1 down before the first request did.)
  const json tried = first["requests"];
  ASSERT_EQ(chat(port(), "user.far").status, 200);
  EXPECT_EQ(endpoint_figures(port(), "user.far", 0)["requests"], tried) << "skipped while down";
  EXPECT_EQ(endpoint_figures(port(), "user.far", 1)["requests"], 2);
  std::string problem;
  const auto metrics = parse_prom_text(http_get(port(), "/api/v1/metrics").body, &problem);
  ASSERT_TRUE(metrics.has_value()) << problem;
  EXPECT_EQ(metrics->value("lemonade_remote_endpoint_up", {{"endpoint", b1.base_url()}}), 0.0);
  EXPECT_EQ(metrics->value("lemonade_remote_endpoint_up", {{"endpoint", b2.base_url()}}), 1.0);
  EXPECT_EQ(metrics->value("lemonade_remote_requests_total", {{"endpoint", b2.base_url()}}), 2.0);
  EXPECT_GE(router().count_log("remote endpoint " + b1.base_url() + " is down"), 1);
}

TEST_F(RemoteTest, AnEndpointThatComesBackIsFoundByTheHealthChecksAndPreferredAgain) {
  OtherRouter b1;
  OtherRouter b2;
  ASSERT_NO_FATAL_FAILURE(start_a({endpoint(b1.base_url()), endpoint(b2.base_url())}));
  const int b1_port = b1.port;
  b1.process->kill_and_reap();
  ASSERT_EQ(chat(port(), "user.far").status, 200);
  ASSERT_TRUE(
      eventually([&] { return endpoint_figures(port(), "user.far", 0)["state"] == "down"; }));
  // B1 comes back on its port: a health check at its retry time finds it,
  // and failover prefers it again.
  // The port may be held for a moment by another socket (an outgoing
  // connection given it as its ephemeral port): B1 tries again until it is
  // free.
  ASSERT_TRUE(eventually([&] {
    b1.start({}, b1_port);
    return b1.port == b1_port;
  })) << b1.process->log_text();
  ASSERT_TRUE(eventually([&] {
    return endpoint_figures(port(), "user.far", 0)["state"] == "healthy";
  })) << health(port()).dump();
  const json before = endpoint_figures(port(), "user.far", 0)["requests"];
  ASSERT_EQ(chat(port(), "user.far").status, 200);
  EXPECT_EQ(endpoint_figures(port(), "user.far", 0)["requests"], before.get<int>() + 1);
  EXPECT_TRUE(loaded_entry(health(b1.port), "user.a").has_value());
  EXPECT_GE(router().count_log("remote endpoint " + b1.base_url() + " is up"), 1);
}

// An OpenAI-compatible server on loopback whose /v1/health always answers
// and whose chats answer `status`, counting both.
class CannedServer {
 public:
  explicit CannedServer(int status) {
    server_.Post("/v1/chat/completions",
                 [this, status](const httplib::Request&, httplib::Response& res) {
                   ++chats;
                   res.status = status;
                   res.set_content(R"({"error":{"message":"no"}})", "application/json");
                 });
    server_.Get("/v1/health", [this](const httplib::Request&, httplib::Response& res) {
      ++checks;
      res.set_content(R"({"status":"ok"})", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~CannedServer() {
    server_.stop();
    thread_.join();
  }
  CannedServer(const CannedServer&) = delete;
  CannedServer& operator=(const CannedServer&) = delete;
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  std::atomic<int> chats{0};
  std::atomic<int> checks{0};

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST_F(RemoteTest, ABusyOrMisconfiguredEndpointIsLeftForTheNext) {
  // The first refuses A's key on chats (its /health, like llama-server's,
  // needs none), the second is busy (503), the third serves.
  CannedServer refuses(401);
  CannedServer busy(503);
  OtherRouter b;
  ASSERT_NO_FATAL_FAILURE(
      start_a({endpoint(refuses.base_url()), endpoint(busy.base_url()), endpoint(b.base_url())}));
  ASSERT_TRUE(eventually([&] {
    return endpoint_figures(port(), "user.far", 0)["state"] == "healthy" &&
           endpoint_figures(port(), "user.far", 1)["state"] == "healthy";
  })) << health(port()).dump();
  HttpReply r = chat(port(), "user.far");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(refuses.chats.load(), 1);
  EXPECT_EQ(busy.chats.load(), 1);
  EXPECT_EQ(endpoint_figures(port(), "user.far", 1)["state"], "healthy") << "busy is not broken";
  json refused = endpoint_figures(port(), "user.far", 0);
  EXPECT_EQ(refused["state"], "down");
  EXPECT_NE(refused["last_error"].get<std::string>().find("refused this router's key"),
            std::string::npos)
      << refused.dump();
  // Its /health still answers, but that does not make it healthy again:
  // only a request that gets through would.
  const int seen = refuses.checks.load();
  ASSERT_TRUE(eventually([&] { return refuses.checks.load() >= seen + 2; }));
  EXPECT_EQ(endpoint_figures(port(), "user.far", 0)["state"], "down");
}

TEST_F(RemoteTest, ARefusedKeyIsTheRoutersProblemNotTheClients) {
  OtherRouter keyed({"--api-key", "right-key"});
  json wrong_key = endpoint(keyed.base_url());
  wrong_key["api_key_env"] = "LEMON_TEST_WRONG_KEY";
  ASSERT_NO_FATAL_FAILURE(
      start_a(json::array({wrong_key}), "failover", {}, {{"LEMON_TEST_WRONG_KEY", "wrong-key"}}));
  HttpReply r = chat(port(), "user.far");
  expect_error(r, 503, "backend_unavailable", "model", "a remote that refuses the router's key");
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("refused this router's key"),
            std::string::npos)
      << r.body;
}

TEST_F(RemoteTest, EveryEndpointDownIsA503NamingTheModel) {
  // Nothing listens on port 1: every connection is refused.
  ASSERT_NO_FATAL_FAILURE(start_a(json::array({endpoint("http://127.0.0.1:1/api/v1")})));
  HttpReply r = chat(port(), "user.far");
  expect_error(r, 503, "backend_unavailable", "", "every endpoint down");
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("user.far"), std::string::npos)
      << r.body;
}

TEST_F(RemoteTest, AStreamThatStartedIsNeverSentAgain) {
  OtherRouter b1;
  OtherRouter b2;
  // Health checks only at start: what takes B1 down below is the request.
  ASSERT_NO_FATAL_FAILURE(start_a({endpoint(b1.base_url()), endpoint(b2.base_url())}, "failover",
                                  {}, {}, {{"health_interval", 3600}, {"retry_after", 3600}}));
  ASSERT_TRUE(
      eventually([&] { return endpoint_figures(port(), "user.far", 0)["state"] == "healthy"; }));
  // The stream's first token reaches the client; then B1 dies with the rest.
  json body = stream_body("user.far", 8, 0);
  body["lemon_fake"]["gate"] = "tokens";
  RawClient client(port());
  ASSERT_TRUE(client.send(raw_request_text(port(), "POST", "/api/v1/chat/completions",
                                           {{"Content-Type", "application/json"}}, body.dump())));
  const std::string first = client.read_until("data: ");
  ASSERT_NE(first.find("200 OK"), std::string::npos) << first;
  b1.process->kill_and_reap();
  std::string rest;
  client.read_to_eof(&rest);
  const std::string all = client.buffered() + rest;
  EXPECT_NE(all.find("\"error\""), std::string::npos) << all;
  EXPECT_NE(all.find("data: [DONE]"), std::string::npos) << all;
  EXPECT_EQ(endpoint_figures(port(), "user.far", 1)["requests"], 0) << "replayed on B2";
  EXPECT_TRUE(health(b2.port)["all_models_loaded"].empty());
  // Reported once the broken stream has been ended for the client.
  EXPECT_TRUE(eventually([&] {
    return endpoint_figures(port(), "user.far", 0)["state"] == "down";
  })) << "a connection lost mid-answer counts against the endpoint";
}

TEST_F(RemoteTest, LeastBusySendsTheSecondRequestToTheIdleEndpoint) {
  OtherRouter b1;
  OtherRouter b2;
  ASSERT_NO_FATAL_FAILURE(
      start_a({endpoint(b1.base_url()), endpoint(b2.base_url())}, "least_busy"));
  // Both endpoints are known healthy before the requests.
  ASSERT_TRUE(eventually([&] {
    return endpoint_figures(port(), "user.far", 0)["state"] == "healthy" &&
           endpoint_figures(port(), "user.far", 1)["state"] == "healthy";
  }));
  auto held = std::async(std::launch::async, [&] {
    return chat(port(), "user.far", {{"lemon_fake", {{"gate", "start"}}}});
  });
  ASSERT_TRUE(
      eventually([&] { return endpoint_figures(port(), "user.far", 0)["in_flight"] == 1; }));
  auto second = std::async(std::launch::async, [&] {
    return chat(port(), "user.far", {{"lemon_fake", {{"gate", "start"}}}});
  });
  ASSERT_TRUE(eventually([&] { return endpoint_figures(port(), "user.far", 1)["in_flight"] == 1; }))
      << health(port()).dump();
  for (auto* b : {&b1, &b2}) {
    std::optional<json> entry;
    ASSERT_TRUE(eventually([&] {
      entry = loaded_entry(health(b->port), "user.a");
      return entry.has_value();
    }));
    ASSERT_TRUE(fake_holds((*entry)["backend_url"], 1));
    release_fake_gates((*entry)["backend_url"]);
  }
  EXPECT_EQ(held.get().status, 200);
  EXPECT_EQ(second.get().status, 200);
}

TEST_F(RemoteTest, DiscoveryListsAnotherRoutersModelsUnderAPrefixWithItsKey) {
  OtherRouter b({"--api-key", "b-secret"});
  ASSERT_GT(b.port, 0);
  env_.write_config(
      {{"remote_discovery",
        {{{"base_url", b.base_url()}, {"key_env", "GPU_BOX_KEY"}, {"prefix", "gpu-box"}}}}});
  auto env = env_.config_env();
  env["GPU_BOX_KEY"] = "b-secret";
  ASSERT_NO_FATAL_FAILURE(start_router({}, env));
  ASSERT_TRUE(eventually([&] {
    const json listed = http_get(port(), "/v1/models").json();
    for (const auto& m : listed["data"]) {
      if (m["id"] == "gpu-box/a") {
        return true;
      }
    }
    return false;
  })) << http_get(port(), "/v1/models").body;
  HttpReply r = chat(port(), "gpu-box/a");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["model"], "a") << "B's name for it";
  EXPECT_EQ(remote_entry(port(), "gpu-box/a")["origin"], "discovery");
}

TEST_F(RemoteTest, AnEndpointWhoseKeyVariableIsUnsetIsNeverCalled) {
  OtherRouter b({"--api-key", "b-secret"});
  json e = endpoint(b.base_url());
  e["api_key_env"] = "LEMON_TEST_UNSET_KEY";
  ASSERT_NO_FATAL_FAILURE(start_a(json::array({e})));
  HttpReply r = chat(port(), "user.far");
  expect_error(r, 503, "backend_unavailable", "model", "no usable endpoint");
  json first = endpoint_figures(port(), "user.far", 0);
  EXPECT_NE(first["last_error"].get<std::string>().find("LEMON_TEST_UNSET_KEY"), std::string::npos)
      << first.dump();
  EXPECT_EQ(first["requests"], 0);
}

// An OpenAI-compatible server over TLS with a certificate made now: it
// answers chats with the model it was asked for, and counts them.
class TlsServer {
 public:
  explicit TlsServer(const SelfSigned& tls) : server_(tls.cert, tls.key) {
    server_.Post(
        "/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
          ++chats;
          const json body = json::parse(req.body, nullptr, false);
          const json answer = {
              {"object", "chat.completion"},
              {"model", body.is_object() ? body.value("model", "") : ""},
              {"choices",
               {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", "over TLS"}}}}}}};
          res.set_content(answer.dump(), "application/json");
        });
    server_.Get("/v1/health", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"status":"ok"})", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() is a no-op until the accept loop runs (a readiness wait; the
    // socket already listens, so clients may connect before it).
    for (int i = 0; i < 10000 && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  ~TlsServer() {
    server_.stop();
    thread_.join();
  }
  std::string base_url() const { return "https://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  std::atomic<int> chats{0};

 private:
  httplib::SSLServer server_;
  int port_ = 0;
  std::thread thread_;
};

TEST_F(RemoteTest, AnHttpsEndpointMustPresentATrustedCertificate) {
  SelfSigned tls;
  ASSERT_TRUE(tls.ok);
  const std::string ca = env_.root() + "/remote-ca.pem";
  ASSERT_TRUE(tls.write_pem(ca));
  TlsServer remote(tls);
  json trusted = endpoint(remote.base_url());
  trusted["ca_file"] = ca;
  env_.write_config(
      {{"remote",
        {{"health_interval", 0.1},
         {"models",
          {{"untrusted",
            {{"checkpoint", "tls-model"},
             {"endpoints", json::array({endpoint(remote.base_url())})}}},
           {"trusted", {{"checkpoint", "tls-model"}, {"endpoints", json::array({trusted})}}}}}}}});
  ASSERT_NO_FATAL_FAILURE(start_router({}, env_.config_env()));

  HttpReply refused = chat(port(), "user.untrusted");
  expect_error(refused, 503, "backend_unavailable", "", "self-signed certificate");
  EXPECT_NE(refused.json()["error"]["message"].get<std::string>().find("certificate"),
            std::string::npos)
      << refused.body;
  EXPECT_EQ(remote.chats.load(), 0) << "nothing reached a server it cannot trust";

  HttpReply served = chat(port(), "user.trusted");
  ASSERT_EQ(served.status, 200) << served.body;
  EXPECT_EQ(served.json()["model"], "tls-model");
  EXPECT_EQ(served.json()["choices"][0]["message"]["content"], "over TLS");
  EXPECT_EQ(remote.chats.load(), 1);
  ASSERT_TRUE(eventually([&] {
    return endpoint_figures(port(), "user.untrusted", 0)["state"] == "down" &&
           endpoint_figures(port(), "user.trusted", 0)["state"] == "healthy";
  })) << health(port()).dump();
}

TEST_F(RemoteTest, AnInvalidRemoteSectionStopsTheStartNamingItsPath) {
  env_.write_config(
      {{"remote",
        {{"models", {{"far", {{"checkpoint", "x"}, {"endpoints", {{{"base_url", 3}}}}}}}}}}});
  RouterProcess& a = launch_router({"--port", "0"}, env_.config_env());
  auto exit = a.wait_exit();
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 2);
  EXPECT_NE(a.log_text().find("remote.models.far.endpoints[0].base_url"), std::string::npos)
      << a.log_text();
}

}  // namespace
}  // namespace lemon::testing
