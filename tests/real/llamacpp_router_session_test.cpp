// A session as a client of llama-server's router API drives it (SillyTavern's
// llama.cpp integration: list, load, watch /models/sse until loaded, chat,
// read the model's /props, unload), against a real llama-server
// (LEMON_REAL_LLAMA_SERVER) started in llama.cpp's child mode.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "real/real_backend.h"
#include "support/http_client.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

class RealLlamaCppRouterTest : public RealLlamaTest {
 protected:
  // GET /models' entry whose id is `id`; null when it is not listed.
  json listed(const std::string& id) {
    HttpReply r = http_get(port(), "/models");
    EXPECT_EQ(r.status, 200) << r.body;
    for (const auto& e : r.json().value("data", json::array())) {
      if (e.value("id", "") == id) {
        return e;
      }
    }
    return nullptr;
  }
};

TEST_F(RealLlamaCppRouterTest, ListLoadWatchChatPropsUnload) {
  add_tiny_chat("tiny");
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  const json before = listed("tiny");
  ASSERT_TRUE(before.is_object()) << http_get(port(), "/models").body;
  EXPECT_EQ(before["status"]["value"], "unloaded");

  SseStream sse(port(), "GET", "/models/sse", "", {});
  ASSERT_TRUE(sse.read_head());
  ASSERT_EQ(sse.status(), 200);
  HttpReply load = http_post(port(), "/models/load", json{{"model", "tiny"}});
  ASSERT_EQ(load.status, 200) << load.body;
  EXPECT_EQ(load.json(), (json{{"success", true}}));

  // The events until "loaded": llama-server's own load reports among them.
  std::vector<std::string> statuses;
  json loaded_event;
  while (auto e = sse.next_data()) {
    const json j = json::parse(e->data, nullptr, false);
    if (!j.is_object() || j.value("model", "") != "tiny" || !j.contains("data")) {
      continue;
    }
    statuses.push_back(j["data"].value("status", ""));
    if (statuses.back() == "loaded") {
      loaded_event = j;
      break;
    }
  }
  ASSERT_FALSE(statuses.empty()) << "no event on /models/sse";
  EXPECT_EQ(statuses.front(), "loading");
  ASSERT_EQ(statuses.back(), "loaded") << ::testing::PrintToString(statuses);
  EXPECT_EQ(listed("tiny")["status"]["value"], "loaded");

  HttpReply chat =
      http_post(port(), "/v1/chat/completions",
                json{{"model", "tiny"},
                     {"max_tokens", 4},
                     {"messages", json::array({{{"role", "user"}, {"content", "Hello"}}})}});
  ASSERT_EQ(chat.status, 200) << chat.body;
  EXPECT_EQ(chat.json()["object"], "chat.completion") << chat.body;

  // The model's /props are llama-server's own.
  HttpReply props = http_get(port(), "/props?model=tiny");
  ASSERT_EQ(props.status, 200) << props.body;
  const json p = props.json();
  EXPECT_TRUE(p.contains("default_generation_settings")) << props.body;
  EXPECT_NE(p.value("model_path", "").find("tiny-llama-chat.gguf"), std::string::npos)
      << props.body;
  EXPECT_TRUE(p.contains("chat_template")) << props.body;

  HttpReply unload = http_post(port(), "/models/unload", json{{"model", "tiny"}});
  ASSERT_EQ(unload.status, 200) << unload.body;
  bool unloaded = false;
  while (auto e = sse.next_data()) {
    const json j = json::parse(e->data, nullptr, false);
    if (j.is_object() && j.value("model", "") == "tiny" && j.contains("data") &&
        j["data"].value("status", "") == "unloaded") {
      unloaded = true;
      EXPECT_EQ(j["data"]["exit_code"], 0) << e->data;
      break;
    }
  }
  EXPECT_TRUE(unloaded) << "no unloaded event";
  EXPECT_EQ(listed("tiny")["status"]["value"], "unloaded");
  EXPECT_FALSE(loaded_entry(health(port()), "user.tiny").has_value());
}

}  // namespace
}  // namespace lemon::testing
