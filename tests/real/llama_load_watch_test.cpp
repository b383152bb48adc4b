// What the router learns from a real llama-server (LEMON_REAL_LLAMA_SERVER)
// while it loads and runs: the load reports it writes in llama.cpp's child
// mode keep a short --load-stall-timeout from failing a working load, and
// the footprint it measured is remembered in <cache>/footprints.json and
// shown for the model once it is unloaded.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "real/real_backend.h"
#include "support/http_client.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

class RealLoadWatchTest : public RealLlamaTest {};

// <cache>/footprints.json's measured RAM of `model`, 0 when none.
std::int64_t remembered_ram(const TestEnv& env, const std::string& model) {
  std::ifstream in(env.cache_dir() + "/footprints.json");
  std::stringstream text;
  text << in.rdbuf();
  const json file = json::parse(text.str(), nullptr, false);
  if (!file.is_object()) {
    return 0;
  }
  for (const auto& e : file.value("footprints", json::array())) {
    if (e.value("model", "") == model) {
      return e["measured"].value("ram", std::int64_t{0});
    }
  }
  return 0;
}

TEST_F(RealLoadWatchTest, AReportingLoadPassesAShortStallBoundAndItsReportsAreEvents) {
  add_tiny_chat("tiny");
  ASSERT_NO_FATAL_FAILURE(start_real_router({"--load-stall-timeout", "1"}));
  SseStream events(port(), "GET", "/api/v1/events", "", {});
  ASSERT_TRUE(events.read_head());
  ASSERT_EQ(events.status(), 200);
  HttpReply loaded = load(port(), "user.tiny");
  ASSERT_EQ(loaded.status, 200) << loaded.body;
  // llama-server's own reports, read from its output in child mode.
  bool loading = false;
  bool ready = false;
  while (!ready) {
    auto e = events.next_data();
    if (!e) {
      break;
    }
    const json j = json::parse(e->data, nullptr, false);
    if (!j.is_object() || j.value("type", "") != "backend_state" ||
        j.value("model", "") != "user.tiny") {
      continue;
    }
    loading = loading || j.value("state", "") == "loading";
    ready = j.value("state", "") == "ready";
  }
  EXPECT_TRUE(loading) << "no load report from llama-server";
  EXPECT_TRUE(ready) << "no ready report from llama-server";
  EXPECT_EQ(chat(port(), "user.tiny", {{"max_tokens", 4}}).status, 200);
}

TEST_F(RealLoadWatchTest, AMeasuredFootprintIsRememberedAndShownWhenUnloaded) {
  add_tiny_chat("tiny");
  ASSERT_NO_FATAL_FAILURE(
      start_real_router({"--memory-budget", "8G", "--memory-poll-interval", "0.1"}));
  ASSERT_EQ(load(port(), "user.tiny").status, 200);
  ASSERT_EQ(chat(port(), "user.tiny", {{"max_tokens", 4}}).status, 200);
  ASSERT_TRUE(eventually([&] { return remembered_ram(env_, "user.tiny") > 0; }))
      << "nothing in footprints.json";
  const std::int64_t ram = remembered_ram(env_, "user.tiny");
  // A real process: more than a MiB, far less than the 8 GiB budget.
  EXPECT_GT(ram, std::int64_t{1} << 20);
  EXPECT_LT(ram, std::int64_t{2} << 30);

  ASSERT_EQ(http_post(port(), "/api/v1/unload", json{{"model_name", "user.tiny"}}).status, 200);
  const HttpReply model = http_get(port(), "/api/v1/models/user.tiny");
  ASSERT_EQ(model.status, 200) << model.body;
  ASSERT_TRUE(model.json()["measured_ram"].is_number_integer()) << model.body;
  EXPECT_GT(model.json()["measured_ram"].get<std::int64_t>(), 0) << model.body;
}

}  // namespace
}  // namespace lemon::testing
