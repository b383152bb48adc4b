// API keys with scopes, model allow-lists and limits against the real
// router (issue #30 §2, docs/auth.md). The scope test walks the router's own
// route table (GET /internal/routes), so a route added later is covered
// without a line here, and none can be added without a scope (ApiRoutes).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <string>
#include <vector>

#include "lemon/auth/api_keys.h"
#include "support/http_client.h"
#include "support/prometheus_text.h"
#include "support/router_events.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

json auth_key(const std::string& name, const std::string& key, const json& scopes,
              const json& extra = json::object()) {
  json entry = {
      {"name", name}, {"key_sha256", auth::hex_of(auth::sha256_of_key(key))}, {"scopes", scopes}};
  entry.update(extra);
  return entry;
}

// One request, and the status of its answer's first line only (a stream
// is not waited for).
int status_only(int port, const std::string& method, const std::string& path,
                const std::vector<std::pair<std::string, std::string>>& headers,
                const std::string& body = "") {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  std::string request = method + " " + path +
                        " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                        "\r\nConnection: close\r\n";
  for (const auto& [name, value] : headers) {
    request += name + ": " + value + "\r\n";
  }
  request += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string line;
  char c = 0;
  while (line.size() < 200 && ::recv(fd, &c, 1, 0) == 1 && c != '\n') {
    line.push_back(c);
  }
  ::close(fd);
  return line.size() >= 12 ? std::stoi(line.substr(9, 3)) : -1;
}

class AuthTest : public RouterTest {
 protected:
  void start_with_keys(const std::vector<json>& keys, const std::vector<std::string>& args = {},
                       std::map<std::string, std::string> extra_env = {}) {
    json config;
    config["auth"]["keys"] = keys;
    env_.write_config(config);
    extra_env["LEMONADE_CONFIG_DIR"] = env_.config_dir();
    start_router(args, extra_env);
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port()); }
  HttpReply as(const std::string& key, const std::string& method, const std::string& path,
               const json& body = nullptr) {
    HeaderList headers;
    if (!key.empty()) {
      headers.emplace_back("Authorization", "Bearer " + key);
    }
    if (!body.is_null()) {
      headers.emplace_back("Content-Type", "application/json");
    }
    return url_request(base(), method, path, body.is_null() ? "" : body.dump(), headers);
  }
  std::vector<std::string> audit_lines() const {
    std::ifstream in(env_.cache_dir() + "/audit.jsonl");
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) {
      out.push_back(line);
    }
    return out;
  }
};

TEST_F(AuthTest, EveryRouteNeedsAKeyWithItsScope) {
  const std::map<std::string, std::string> keys = {
      {"inference", "k-infer-1"}, {"read", "k-read-2"}, {"admin", "k-admin-3"}};
  ASSERT_NO_FATAL_FAILURE(start_with_keys({auth_key("infer", keys.at("inference"), {"inference"}),
                                           auth_key("reader", keys.at("read"), {"read"}),
                                           auth_key("ops", keys.at("admin"), {"admin"})}));
  HttpReply table = as(keys.at("admin"), "GET", "/internal/routes");
  ASSERT_EQ(table.status, 200) << table.body;
  const json routes = table.json()["routes"];
  ASSERT_GT(routes.size(), 40u) << table.body;
  std::map<std::string, int> by_scope;
  for (const auto& entry : routes) {
    const std::string route = entry["route"];
    const std::string scope = entry["scope"];
    ++by_scope[scope];
    // A WebSocket route is asked with an upgrade (a GET); without a key it
    // opens, and its client must then authenticate in-band.
    const bool socket = route.starts_with("WEBSOCKET ");
    const std::string method = socket ? "GET" : route.substr(0, route.find(' '));
    std::string path = route.substr(route.find(' ') + 1);
    if (const auto id = path.find("{id}"); id != std::string::npos) {
      path.replace(id, 4, "x");
    }
    // A body of the wrong type: a key that passes gets 415 from the check
    // that follows the key's, so no POST route runs (nothing is shut down,
    // deleted or pulled); GET routes run, and a stream's first line is all
    // that is read.
    const bool takes_body = method != "GET";
    auto send = [&](const std::string& key) {
      std::vector<std::pair<std::string, std::string>> headers;
      if (!key.empty()) {
        headers.emplace_back("Authorization", "Bearer " + key);
      }
      if (takes_body) {
        headers.emplace_back("Content-Type", "text/plain");
      }
      if (socket) {
        headers.insert(headers.end(), {{"Upgrade", "websocket"},
                                       {"Connection", "Upgrade"},
                                       {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                                       {"Sec-WebSocket-Version", "13"}});
      }
      return status_only(port(), method, path, headers, takes_body ? "x" : "");
    };
    const int without = send("");
    if (socket) {
      EXPECT_EQ(without, 101) << route << " opens for an in-band auth message";
    } else if (scope == "public") {
      EXPECT_NE(without, 401) << route;
    } else {
      EXPECT_EQ(without, 401) << route << " answers without a key";
    }
    for (const auto& [key_scope, key] : keys) {
      const auto wanted = auth::scope_from_name(scope);
      ASSERT_TRUE(wanted.has_value()) << scope;
      const auto held = auth::scope_from_name(key_scope);
      const bool allowed = *wanted == auth::Scope::kPublic ||
                           (static_cast<int>(*wanted) & static_cast<int>(*held)) != 0;
      const int status = send(key);
      if (allowed && socket) {
        EXPECT_EQ(status, 101) << route << " (" << scope << ") refused a " << key_scope << " key";
      } else if (allowed) {
        EXPECT_TRUE(status != 401 && status != 403 && status > 0)
            << route << " (" << scope << ") refused a " << key_scope << " key: " << status;
      } else {
        EXPECT_EQ(status, 403) << route << " (" << scope << ") let a " << key_scope
                               << " key through";
      }
    }
  }
  for (const char* scope : {"public", "inference", "read", "inference or read", "admin"}) {
    EXPECT_GT(by_scope[scope], 0) << "no route of scope " << scope;
  }
  HttpReply refused = as(keys.at("inference"), "POST", "/api/v1/load", json{{"model_name", "x"}});
  ASSERT_EQ(refused.status, 403);
  const std::string message = refused.json()["error"]["message"];
  EXPECT_NE(message.find("'infer'"), std::string::npos) << message;
  EXPECT_NE(message.find("'admin'"), std::string::npos) << message;
  EXPECT_EQ(message.find(keys.at("inference")), std::string::npos) << "never the key itself";
}

TEST_F(AuthTest, AModelListLimitsWhatAKeySeesAndUses) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_with_keys(
      {auth_key("chat", "k-chat", {"inference"}, {{"models", {"user.a", "other-*"}}}),
       auth_key("all", "k-all", {"inference"}), auth_key("ops", "k-ops", {"read"})},
      {"--max-loaded-models", "2"}));
  auto names = [](const HttpReply& r, const char* list, const char* field) {
    std::vector<std::string> out;
    const json body = r.json();
    for (const auto& m : body[list]) {
      out.push_back(m[field]);
    }
    return out;
  };
  HttpReply models = as("k-chat", "GET", "/v1/models");
  ASSERT_EQ(models.status, 200) << models.body;
  EXPECT_EQ(names(models, "data", "id"), std::vector<std::string>{"a"});
  HttpReply all = as("k-all", "GET", "/v1/models");
  EXPECT_EQ(names(all, "data", "id").size(), 2u) << all.body;
  HttpReply tags = as("k-chat", "GET", "/api/tags");
  ASSERT_EQ(tags.status, 200);
  EXPECT_EQ(tags.json()["models"].size(), 1u) << tags.body;
  EXPECT_EQ(as("k-chat", "GET", "/api/v1/models/user.b").status, 404);

  HttpReply refused = as("k-chat", "POST", "/v1/chat/completions", chat_body("user.b"));
  EXPECT_EQ(refused.status, 403) << refused.body;
  EXPECT_EQ(refused.json()["error"]["param"], "model");
  EXPECT_TRUE(loaded_names(as("k-chat", "GET", "/api/v1/health").json()).empty())
      << "nothing loads for a refused model";
  // Ollama's and Anthropic's routes are held to the same list, an Ollama
  // load (a generate with no prompt) too.
  EXPECT_EQ(as("k-chat", "POST", "/api/chat",
               json{{"model", "user.b"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}})
                .status,
            403);
  EXPECT_EQ(as("k-chat", "POST", "/api/generate", json{{"model", "user.b"}}).status, 403);
  EXPECT_EQ(as("k-chat", "POST", "/v1/messages",
               json{{"model", "user.b"},
                    {"max_tokens", 8},
                    {"messages", {{{"role", "user"}, {"content", "hi"}}}}})
                .status,
            403);
  EXPECT_TRUE(loaded_names(as("k-chat", "GET", "/api/v1/health").json()).empty());
  HttpReply ok = as("k-chat", "POST", "/v1/chat/completions", chat_body("user.a"));
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(as("k-all", "POST", "/v1/chat/completions", chat_body("user.b")).status, 200);
  // Its /health shows only its models, loaded or most recently loaded.
  const json h = as("k-chat", "GET", "/api/v1/health").json();
  EXPECT_EQ(loaded_names(h), Names{"user.a"}) << h.dump();
  EXPECT_TRUE(h["model_loaded"].is_null()) << "user.b was loaded last: " << h.dump();
  EXPECT_EQ(loaded_names(as("k-all", "GET", "/api/v1/health").json()), (Names{"user.a", "user.b"}));
  // Each refusal above is counted, whichever API it came by.
  const std::string metrics = as("k-ops", "GET", "/metrics").body;
  EXPECT_NE(metrics.find("lemonade_key_refusals_total{key=\"chat\",reason=\"model\"} 4"),
            std::string::npos)
      << metrics;
}

TEST_F(AuthTest, AKeyOverItsRequestsAtOnceGets429AndTheBackendSeesNothingOfThem) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(
      start_with_keys({auth_key("one", "k-one", {"inference"}, {{"max_concurrent", 1}}),
                       auth_key("ops", "k-ops", {"admin", "read"})}));
  ASSERT_EQ(as("k-ops", "POST", "/api/v1/load", json{{"model_name", "user.a"}}).status, 200);
  const std::string url =
      loaded_field(as("k-ops", "GET", "/api/v1/health").json(), "user.a", "backend_url");
  json held = chat_body("user.a");
  held["lemon_fake"] = {{"gate", "start"}};
  auto first = std::async(std::launch::async,
                          [&] { return as("k-one", "POST", "/v1/chat/completions", held); });
  ASSERT_TRUE(fake_holds(url, 1));
  const long before = fake_state(url)["requests"];
  std::vector<std::future<HttpReply>> burst;
  for (int i = 0; i < 6; ++i) {
    burst.push_back(std::async(std::launch::async, [&] {
      return as("k-one", "POST", "/v1/chat/completions", chat_body("user.a"));
    }));
  }
  for (auto& f : burst) {
    HttpReply r = f.get();
    EXPECT_EQ(r.status, 429) << r.body;
    EXPECT_EQ(r.header("Retry-After"), "1");
    EXPECT_EQ(r.json()["error"]["code"], "rate_limit_exceeded") << r.body;
  }
  EXPECT_EQ(fake_state(url)["requests"].get<long>(), before) << "a refused request reached it";
  release_fake_gates(url);
  EXPECT_EQ(first.get().status, 200);
  EXPECT_EQ(as("k-one", "POST", "/v1/chat/completions", chat_body("user.a")).status, 200)
      << "the lease ended with the answer";
}

TEST_F(AuthTest, AKeyOverItsRequestsAMinuteGets429WithRetryAfter) {
  ASSERT_NO_FATAL_FAILURE(
      start_with_keys({auth_key("slow", "k-slow", {"read"}, {{"requests_per_minute", 2}})}));
  EXPECT_EQ(as("k-slow", "GET", "/api/v1/health").status, 200);
  EXPECT_EQ(as("k-slow", "GET", "/api/v1/stats").status, 200);
  HttpReply r = as("k-slow", "GET", "/api/v1/health");
  ASSERT_EQ(r.status, 429) << r.body;
  const int after = std::stoi(r.header("Retry-After"));
  EXPECT_GE(after, 1);
  EXPECT_LE(after, 30);
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("requests_per_minute"),
            std::string::npos);
}

TEST_F(AuthTest, AdminActionsAreAuditedAndKeysAreCountedByName) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_with_keys(
      {auth_key("infer", "k-infer", {"inference"}), auth_key("ops", "k-ops", {"admin", "read"})}));
  ASSERT_EQ(as("k-ops", "POST", "/api/v1/load", json{{"model_name", "user.a"}}).status, 200);
  ASSERT_EQ(as("k-infer", "POST", "/api/v1/unload", json{{"model_name", "user.a"}}).status, 403);
  ASSERT_EQ(as("k-infer", "POST", "/v1/chat/completions", chat_body("user.a")).status, 200);
  ASSERT_EQ(as("wrong", "GET", "/v1/models").status, 401);

  const auto lines = audit_lines();
  ASSERT_EQ(lines.size(), 2u) << "an audit line per admin request, and only those";
  const json load = json::parse(lines[0]);
  EXPECT_EQ(load["key"], "ops");
  EXPECT_EQ(load["method"], "POST");
  EXPECT_EQ(load["path"], "/api/v1/load");
  EXPECT_EQ(load["model"], "user.a");
  EXPECT_EQ(load["status"], 200);
  EXPECT_GT(load["time"].get<long long>(), 0);
  const json refused = json::parse(lines[1]);
  EXPECT_EQ(refused["key"], "infer");
  EXPECT_EQ(refused["path"], "/api/v1/unload");
  EXPECT_EQ(refused["status"], 403);

  // A request's tokens are counted once its answer is written: wait for them.
  std::string text;
  EXPECT_TRUE(eventually([&] {
    text = as("k-ops", "GET", "/metrics").body;
    return text.find("lemonade_key_generated_tokens_total{key=\"infer\"}") != std::string::npos &&
           text.find("lemonade_key_prompt_tokens_total{key=\"infer\"}") != std::string::npos;
  })) << text;
  EXPECT_NE(text.find("lemonade_key_requests_total{key=\"infer\",scope=\"inference\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("lemonade_key_refusals_total{key=\"infer\",reason=\"scope\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("lemonade_key_refusals_total{key=\"unknown\",reason=\"key\"} 1"),
            std::string::npos);
  EXPECT_EQ(text.find("k-infer"), std::string::npos) << "a key in the metrics";
}

TEST_F(AuthTest, KeysChangeWithTheConfigurationAndTheLegacyOnesStay) {
  ASSERT_NO_FATAL_FAILURE(
      start_with_keys({auth_key("ops", "k-ops", {"admin", "read"})}, {},
                      {{"LEMONADE_API_KEY", "k-user"}, {"LEMONADE_ADMIN_API_KEY", "k-admin"}}));
  EXPECT_EQ(as("k-user", "GET", "/v1/models").status, 200);
  EXPECT_EQ(as("k-user", "POST", "/api/v1/unload", json::object()).status, 403)
      << "with an admin key set, the user key is no admin";
  EXPECT_EQ(as("k-admin", "POST", "/api/v1/unload", json::object()).status, 200);
  EXPECT_EQ(as("k-new", "GET", "/v1/models").status, 401);

  RouterEvents events(port());
  HttpReply set = as("k-ops", "POST", "/internal/set",
                     json{{"auth", {{"keys", {auth_key("new", "k-new", {"inference"})}}}}});
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_NE(set.json()["applied"].dump().find("auth"), std::string::npos) << set.body;
  EXPECT_EQ(as("k-new", "GET", "/v1/models").status, 200) << "a new key works at once";
  EXPECT_EQ(as("k-ops", "GET", "/v1/models").status, 401) << "a removed key no longer does";
  EXPECT_EQ(as("k-admin", "GET", "/internal/config").status, 200);
  HttpReply config = as("k-admin", "GET", "/internal/config");
  EXPECT_EQ(config.body.find(auth::hex_of(auth::sha256_of_key("k-new"))), std::string::npos)
      << "the hashes are not shown";

  EXPECT_EQ(set.body.find(auth::hex_of(auth::sha256_of_key("k-new"))), std::string::npos)
      << "the answer echoes no hash: " << set.body;
  // Anthropic's clients send x-api-key; a stale Bearer beside it does not
  // hide it.
  HttpReply anthropic = url_request(base(), "POST", "/v1/messages/count_tokens", "{}",
                                    {{"x-api-key", "k-new"},
                                     {"Authorization", "Bearer stale"},
                                     {"Content-Type", "application/json"}});
  EXPECT_NE(anthropic.status, 401) << anthropic.body;
  EXPECT_EQ(url_request(base(), "POST", "/v1/chat/completions", "{}",
                        {{"x-api-key", "k-new"}, {"Content-Type", "application/json"}})
                .status,
            401)
      << "OpenAI's routes take the Bearer only";
}

TEST_F(AuthTest, ASessionBelongsToTheKeyThatMadeIt) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_with_keys({auth_key("alice", "k-alice", {"inference"}),
                                           auth_key("bob", "k-bob", {"inference"}),
                                           auth_key("ops", "k-ops", {"admin", "inference"})}));
  HttpReply made = as("k-alice", "POST", "/api/v1/sessions", json{{"model", "user.a"}});
  ASSERT_EQ(made.status, 200) << made.body;
  const std::string id = made.json()["id"];
  const std::string path = "/api/v1/sessions/" + id;
  EXPECT_EQ(as("k-alice", "GET", path).status, 200);
  for (const auto& [method, suffix] :
       std::vector<std::pair<std::string, std::string>>{{"GET", ""},
                                                        {"POST", "/messages"},
                                                        {"POST", "/generate"},
                                                        {"POST", "/cancel"},
                                                        {"DELETE", ""}}) {
    const json body = method == "POST" ? json{{"role", "user"}, {"content", "hi"}} : json(nullptr);
    HttpReply r = as("k-bob", method, path + suffix, body);
    EXPECT_EQ(r.status, 404) << method << " " << suffix << ": " << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "session_not_found") << r.body;
  }
  auto ids = [&](const std::string& key) {
    std::vector<std::string> out;
    const json list = as(key, "GET", "/api/v1/sessions").json();
    for (const auto& s : list["data"]) {
      out.push_back(s["id"]);
    }
    return out;
  };
  EXPECT_EQ(ids("k-alice"), std::vector<std::string>{id});
  EXPECT_TRUE(ids("k-bob").empty()) << "another key's sessions are not listed";
  EXPECT_EQ(ids("k-ops"), std::vector<std::string>{id}) << "an admin key sees every session";
  EXPECT_EQ(as("k-alice", "GET", path).status, 200) << "bob's tries changed nothing";
}

TEST_F(AuthTest, ASessionsTurnsCountTheirTokensForTheKey) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_with_keys(
      {auth_key("alice", "k-alice", {"inference"}), auth_key("ops", "k-ops", {"read"})}));
  HttpReply made = as("k-alice", "POST", "/api/v1/sessions", json{{"model", "user.a"}});
  ASSERT_EQ(made.status, 200) << made.body;
  const std::string path = "/api/v1/sessions/" + made.json()["id"].get<std::string>();
  ASSERT_EQ(
      as("k-alice", "POST", path + "/messages", json{{"role", "user"}, {"content", "hi"}}).status,
      200);
  HttpReply turn = as("k-alice", "POST", path + "/generate", json{{"max_tokens", 5}});
  ASSERT_EQ(turn.status, 200) << turn.body;
  // The turn is counted once its answer is written: read until it shows.
  std::string problem;
  std::optional<PromText> metrics;
  ASSERT_TRUE(eventually([&] {
    metrics = parse_prom_text(as("k-ops", "GET", "/api/v1/metrics").body, &problem);
    return metrics &&
           metrics->value("lemonade_requests_total",
                          {{"model", "user.a"}, {"route", "sessions"}, {"status", "200"}});
  })) << problem;
  EXPECT_GT(metrics->value("lemonade_key_generated_tokens_total", {{"key", "alice"}}).value_or(0),
            0.0);
  EXPECT_GT(metrics->value("lemonade_key_prompt_tokens_total", {{"key", "alice"}}).value_or(0),
            0.0);
  EXPECT_EQ(metrics->value("lemonade_requests_total",
                           {{"model", "user.a"}, {"route", "sessions"}, {"status", "200"}}),
            1.0);
}

TEST_F(AuthTest, ABrokenKeyListStopsTheStartNamingItsPath) {
  env_.write_config(
      {{"auth", {{"keys", {{{"name", "x"}, {"key_sha256", "nope"}, {"scopes", {"read"}}}}}}}});
  RouterProcess& p = launch_router({"--port", "0"}, {{"LEMONADE_CONFIG_DIR", env_.config_dir()}});
  auto exit = p.wait_exit();
  ASSERT_TRUE(exit.has_value()) << "the router did not exit";
  EXPECT_EQ(exit->code, 2);
  ASSERT_EQ(p.log_lines().size(), 1u) << p.log_text();
  EXPECT_NE(p.log_text().find("auth.keys[0].key_sha256"), std::string::npos) << p.log_text();
}

TEST_F(AuthTest, KeysInTheConfigLetItListenBeyondLoopback) {
  json config;
  config["auth"]["keys"] = std::vector<json>{auth_key("ops", "k-ops", {"read"})};
  env_.write_config(config);
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--host", "0.0.0.0"}, {{"LEMONADE_CONFIG_DIR", env_.config_dir()}}));
  EXPECT_EQ(as("", "GET", "/api/v1/health").status, 401);
  EXPECT_EQ(as("k-ops", "GET", "/api/v1/health").status, 200);
}

}  // namespace
}  // namespace lemon::testing
