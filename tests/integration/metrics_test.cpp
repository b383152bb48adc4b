// GET /metrics (issue #12 §2) against the real router: the text parses as
// Prometheus format and counts what happened; the gateway gauges follow the
// router's queue and the backends' /slots; access follows --metrics-public.
#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/prometheus_text.h"
#include "support/raw_client.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using MetricsTest = RouterTest;

PromText scrape(int port, const std::string& path = "/metrics",
                const std::string& content_type = "text/plain; version=0.0.4; charset=utf-8") {
  HttpReply r = http_get(port, path);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("Content-Type"), content_type);
  std::string error;
  auto parsed = parse_prom_text(r.body, &error);
  EXPECT_TRUE(parsed.has_value()) << error;
  return parsed.value_or(PromText{});
}

TEST_F(MetricsTest, AScrapeParsesAndCountsRequestsLoadsAndEvictions) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.a").status, 200);
  ASSERT_EQ(chat(port(), "user.a").status, 200);
  {
    SseStream s(port(), "/api/v1/chat/completions", stream_body("user.a", 3, 0).dump());
    ASSERT_TRUE(s.read_head());
    ASSERT_FALSE(s.rest().empty());
  }
  ASSERT_EQ(chat(port(), "user.b").status, 200);  // evicts user.a (one LLM at a time)
  ASSERT_EQ(chat(port(), "nope").status, 404);

  PromText m;
  // The request is recorded after its last byte went out: wait for it.
  ASSERT_TRUE(eventually([&] {
    m = scrape(port());
    return m.value("lemonade_requests_total", {{"model", "user.b"}}) == 1.0;
  }));
  EXPECT_EQ(m.value("lemonade_requests_total",
                    {{"model", "user.a"}, {"route", "chat/completions"}, {"status", "200"}}),
            2.0);
  EXPECT_EQ(m.value("lemonade_request_duration_seconds_count", {{"model", "user.a"}}), 2.0);
  EXPECT_GT(m.value("lemonade_generated_tokens_total", {{"model", "user.a"}}).value_or(0), 0.0);
  EXPECT_EQ(m.value("lemonade_time_to_first_token_seconds_count", {{"model", "user.a"}}), 2.0);
  EXPECT_EQ(m.value("lemonade_model_loads_total", {{"model", "user.a"}, {"result", "success"}}),
            1.0);
  EXPECT_EQ(m.value("lemonade_model_load_duration_seconds_count", {{"model", "user.b"}}), 1.0);
  EXPECT_EQ(
      m.value("lemonade_model_evictions_total", {{"model", "user.a"}, {"reason", "slot_limit"}}),
      1.0);
  EXPECT_EQ(m.value("lemonade_loaded_models", {{"type", "llm"}, {"device", "cpu"}}), 1.0);
  EXPECT_EQ(m.value("lemonade_requests_in_flight", {{"model", "user.b"}}), 0.0);
  EXPECT_EQ(m.value("lemonade_build_info"), 1.0);
  EXPECT_GT(
      m.value("lemonade:loaded_models_info", {{"running_lora_adapters", "user.b"}}).value_or(0),
      1.7e9)
      << "a Unix time";
  for (const auto& f : m.families) {
    for (const auto& s : f.samples) {
      auto it = s.labels.find("model");
      EXPECT_TRUE(it == s.labels.end() || it->second != "nope")
          << "an unknown model name got a series: " << s.name;
    }
  }
  // The same text under the API prefixes.
  EXPECT_TRUE(scrape(port(), "/api/v1/metrics").family("lemonade_requests_total") != nullptr);
}

TEST_F(MetricsTest, WaitingAndRunningRequestsAreTheGatewayGauges) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.a", {{"parallel", 1}}).status, 200);
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  const std::string slow =
      chat_body("user.a", {{"lemon_fake", {{"response_delay_ms", 30000}}}}).dump();
  SseStream first(port(), "/api/v1/chat/completions", slow);
  ASSERT_TRUE(eventually([&] { return fake_state(url)["active"] == 1; }));
  // The second waits for the one slot inside llama-server's own queue
  // (issue #27), the third in the router's line: both are waiting.
  SseStream second(port(), "/api/v1/chat/completions", slow);
  ASSERT_TRUE(eventually([&] { return fake_state(url)["queued_for_slot"] == 1; }));
  SseStream third(port(), "/api/v1/chat/completions", slow);
  PromText m;
  ASSERT_TRUE(eventually([&] {
    m = scrape(port());
    return m.value("lemonade:num_requests_waiting") == 2.0;
  })) << "the second and third requests never showed as waiting";
  EXPECT_EQ(m.value("lemonade:num_requests_running"), 1.0);
  EXPECT_EQ(m.value("lemonade_requests_in_flight", {{"model", "user.a"}}), 2.0);
  EXPECT_EQ(m.value("lemonade_queue_depth", {{"model", "user.a"}}), 2.0);
  first.disconnect();
  second.disconnect();
  third.disconnect();
  ASSERT_TRUE(eventually([&] {
    m = scrape(port());
    return m.value("lemonade:num_requests_waiting") == 0.0 &&
           m.value("lemonade:num_requests_running") == 0.0;
  }));
}

TEST_F(MetricsTest, KvCacheUsageIsTheBackendsSlotsInUse) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.a", {{"parallel", 2}, {"ctx_size", 1000}}).status, 200);
  PromText before = scrape(port());
  EXPECT_EQ(before.value("lemonade:kv_cache_usage_perc"), 0.0) << "nothing cached yet";
  ASSERT_EQ(chat(port(), "user.a", {{"max_tokens", 50}}).status, 200);
  // What the backend itself reports, summed over its slots.
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  // Only with the backend's secret, as the router reads it (issue #24).
  const std::string key = environment_value(loaded_pid(port(), "user.a"), "LLAMA_API_KEY");
  auto slots = url_request(url, "GET", "/slots", "", {{"Authorization", "Bearer " + key}}).json();
  ASSERT_TRUE(slots.is_array()) << slots.dump();
  double used = 0;
  double total = 0;
  for (const auto& s : slots) {
    total += s["n_ctx"].get<double>();
    if (s.contains("n_prompt_tokens")) {
      used += s["n_prompt_tokens"].get<double>() + s["next_token"][0]["n_decoded"].get<double>();
    }
  }
  ASSERT_EQ(total, 2000.0) << "two slots of ctx_size 1000 each";
  ASSERT_GT(used, 0.0);
  PromText m;
  // A scrape reads /slots at most once a second: wait out the cached answer.
  ASSERT_TRUE(eventually([&] {
    m = scrape(port());
    return m.value("lemonade:kv_cache_usage_perc").value_or(0) > 0.0;
  }));
  EXPECT_NEAR(*m.value("lemonade:kv_cache_usage_perc"), used / total, 1e-9);
}

TEST_F(MetricsTest, TheKeyIsNeededUnlessMetricsPublic) {
  ASSERT_NO_FATAL_FAILURE(start_router({"--api-key", "sekret"}));
  EXPECT_EQ(http_get(port(), "/metrics").status, 401);
  EXPECT_EQ(http_get(port(), "/api/v1/metrics").status, 401);
  RawClient c(port());
  c.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port()) +
         "\r\nAuthorization: Bearer sekret\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(c.read_response().status, 200);
  EXPECT_EQ(http_get(port(), "/ready").status, 200) << "probes never need the key";
  EXPECT_EQ(http_get(port(), "/live").status, 200);

  ASSERT_NO_FATAL_FAILURE(start_router({"--api-key", "sekret", "--metrics-public"}));
  EXPECT_EQ(http_get(port(), "/metrics").status, 200);
  EXPECT_EQ(http_get(port(), "/api/v1/health").status, 401) << "only /metrics is opened";
}

}  // namespace
}  // namespace lemon::testing
