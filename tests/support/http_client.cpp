#include "support/http_client.h"

#include <strings.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <httplib.h>

#include <gtest/gtest.h>

namespace lemon::testing {
namespace {

HttpReply send(httplib::Client& client, const std::string& method, const std::string& path,
               const std::string& body, const HeaderList& headers = {}) {
  client.set_tcp_nodelay(true);
  client.set_connection_timeout(std::chrono::seconds(10));
  client.set_read_timeout(std::chrono::seconds(60));
  client.set_write_timeout(std::chrono::seconds(10));
  httplib::Request req;
  req.method = method;
  req.path = path;
  if (!body.empty() || (method != "GET" && method != "HEAD")) {
    req.body = body;
    req.set_header("Content-Type", "application/json");
  }
  for (const auto& [name, value] : headers) {
    req.set_header(name, value);
  }
  HttpReply reply;
  auto res = client.send(req);
  if (!res) {
    reply.error = httplib::to_string(res.error());
    return reply;
  }
  reply.status = res->status;
  reply.body = res->body;
  for (const auto& [k, v] : res->headers) {
    reply.headers.emplace_back(k, v);
  }
  return reply;
}

}  // namespace

nlohmann::json HttpReply::json() const {
  return nlohmann::json::parse(body, nullptr, false);
}

std::string HttpReply::header(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (::strcasecmp(k.c_str(), name.c_str()) == 0) {
      return v;
    }
  }
  return "";
}

bool HttpReply::has_header(const std::string& name) const {
  for (const auto& [k, v] : headers) {
    if (::strcasecmp(k.c_str(), name.c_str()) == 0) {
      return true;
    }
  }
  return false;
}

HttpReply http_request(int port, const std::string& method, const std::string& path,
                       const std::string& body) {
  httplib::Client client("127.0.0.1", port);
  return send(client, method, path, body);
}

HttpReply http_get(int port, const std::string& path) {
  return http_request(port, "GET", path);
}

HttpReply http_post(int port, const std::string& path, const std::string& body) {
  return http_request(port, "POST", path, body);
}

HttpReply http_post(int port, const std::string& path, const nlohmann::json& body) {
  return http_request(port, "POST", path, body.dump());
}

HttpReply url_get(const std::string& base_url, const std::string& path) {
  httplib::Client client(base_url);
  return send(client, "GET", path, "");
}

HttpReply url_request(const std::string& base_url, const std::string& method,
                      const std::string& path, const std::string& body, const HeaderList& headers) {
  httplib::Client client(base_url);
  return send(client, method, path, body, headers);
}

nlohmann::json chat_body(const std::string& model, const nlohmann::json& extra) {
  nlohmann::json body = {{"model", model}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  body.update(extra);
  return body;
}

nlohmann::json stream_body(const std::string& model, int tokens, int chunk_delay_ms) {
  return chat_body(
      model, {{"stream", true},
              {"lemon_fake", {{"tokens", tokens}, {"stream_chunk_delay_ms", chunk_delay_ms}}}});
}

HttpReply chat(int port, const std::string& model, const nlohmann::json& extra,
               const std::string& path) {
  return http_post(port, path, chat_body(model, extra));
}

HttpReply load(int port, const std::string& model, const nlohmann::json& extra) {
  nlohmann::json body = {{"model_name", model}};
  body.update(extra);
  return http_post(port, "/api/v1/load", body);
}

nlohmann::json health(int port) {
  HttpReply r = http_get(port, "/api/v1/health");
  EXPECT_EQ(r.status, 200) << r.error << r.body;
  auto j = r.json();
  if (r.status != 200 || !j.is_object()) {
    return nullptr;
  }
  return j;
}

std::optional<nlohmann::json> loaded_entry(const nlohmann::json& health, const std::string& model) {
  if (!health.is_object() || !health.contains("all_models_loaded")) {
    return std::nullopt;
  }
  for (const auto& e : health["all_models_loaded"]) {
    if (e.value("model_name", "") == model) {
      return e;
    }
  }
  return std::nullopt;
}

nlohmann::json loaded_field(const nlohmann::json& health, const std::string& model,
                            const std::string& key) {
  auto entry = loaded_entry(health, model);
  if (!entry || !entry->contains(key)) {
    return nullptr;
  }
  return (*entry)[key];
}

Names loaded_names(const nlohmann::json& health) {
  std::vector<std::string> names;
  if (health.is_object() && health.contains("all_models_loaded")) {
    for (const auto& e : health["all_models_loaded"]) {
      names.push_back(e.value("model_name", ""));
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

int loaded_pid(int port, const std::string& model) {
  auto entry = loaded_entry(health(port), model);
  if (!entry || !(*entry)["pid"].is_number_integer()) {
    return -1;
  }
  return (*entry)["pid"].get<int>();
}

nlohmann::json fake_state(const std::string& backend_url) {
  HttpReply r = url_get(backend_url, "/fake/state");
  EXPECT_EQ(r.status, 200) << backend_url << ": " << r.error << r.body;
  return r.json();
}

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (condition()) {
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    // The polling interval, not a synchronization: a waiting test must not
    // take a core from the router and fakes it waits for (issue #23).
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void release_fake_gates(const std::string& backend_url) {
  // Its answer may never come: what the release lets finish can stop the
  // fake at once (a drain that waited for it). The test waits on what the
  // release brings about instead.
  httplib::Client client(backend_url);
  send(client, "POST", "/fake/release", "");
}

bool fake_holds(const std::string& backend_url, int count) {
  return eventually([&] { return fake_state(backend_url)["held"] == count; });
}

bool fake_reached_gate(const std::string& backend_url, long count) {
  return eventually([&] {
    auto s = fake_state(backend_url);
    return s["gates_reached"] == count && s["held"] == 1;
  });
}

bool is_error_envelope(const nlohmann::json& body) {
  if (!body.is_object() || body.size() != 1 || !body.contains("error")) {
    return false;
  }
  const auto& e = body["error"];
  return e.is_object() && e.contains("message") && e["message"].is_string() && e.contains("type") &&
         e["type"].is_string() && e.contains("param") &&
         (e["param"].is_null() || e["param"].is_string()) && e.contains("code") &&
         e["code"].is_string();
}

}  // namespace lemon::testing
