// Shared by the routing policy tests: a fixture that registers
// collection.router policies through POST /api/v1/pull over user models
// served by the fake llama-server, and tells which fake served a request.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_fixture.h"

namespace lemon::testing {

// A collection.router pull body: `routing` under the given name, its
// components as listed.
inline nlohmann::json router_policy(const std::string& name,
                                    const std::vector<std::string>& components,
                                    const nlohmann::json& routing) {
  return {{"model_name", name},
          {"recipe", "collection.router"},
          {"version", "1"},
          {"components", components},
          {"routing", routing}};
}

// A chat body whose last user message is `text`.
inline nlohmann::json chat_text(const std::string& model, const std::string& text,
                                const nlohmann::json& extra = nlohmann::json::object()) {
  nlohmann::json body = {{"model", model},
                         {"messages", {{{"role", "user"}, {"content", text}}}},
                         {"lemon_fake", {{"tokens", 3}}}};
  body.update(extra);
  return body;
}

class RoutingPolicyFixture : public RouterTest {
 protected:
  // POST /api/v1/pull with `body`; fails fatally unless it answers 200.
  void register_policy(const nlohmann::json& body) {
    HttpReply r = http_post(port(), "/api/v1/pull", body);
    ASSERT_EQ(r.status, 200) << r.body;
    ASSERT_EQ(r.json()["status"], "success") << r.body;
  }

  // Inference requests the fake serving `model` answered; -1 when the
  // model is not loaded.
  int served(const std::string& model) {
    const nlohmann::json url = loaded_field(health(port()), model, "backend_url");
    if (!url.is_string()) {
      return -1;
    }
    return fake_state(url.get<std::string>()).value("requests", -1);
  }
};

}  // namespace lemon::testing
