// The metrics text (issue #12 §4): what the registry and the hub write is
// parsed back with a strict reader of the Prometheus format and checked.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "lemon/telemetry/metrics.h"
#include "lemon/telemetry/telemetry_hub.h"
#include "support/prometheus_text.h"

namespace lemon::telemetry {
namespace {

using testing::parse_prom_text;
using ParsedText = testing::PromText;

ParsedText parsed_metrics(const std::string& text) {
  std::string error;
  auto p = parse_prom_text(text, &error);
  EXPECT_TRUE(p.has_value()) << error << "\n" << text;
  return p.value_or(ParsedText{});
}

TEST(PromReader, RefusesWhatTheFormatForbids) {
  std::string error;
  EXPECT_FALSE(parse_prom_text("x 1\n", &error)) << "a sample of an undeclared family";
  EXPECT_FALSE(parse_prom_text("# TYPE x counter\nx{a=\"1\"} 1\nx{a=\"1\"} 2\n", &error))
      << "a repeated series";
  EXPECT_FALSE(parse_prom_text("# TYPE x gauge\nx{a=\"\\t\"} 1\n", &error)) << "a bad escape";
  EXPECT_FALSE(parse_prom_text("# TYPE 1x gauge\n", &error)) << "a bad name";
  EXPECT_FALSE(
      parse_prom_text("# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} "
                      "1\nh_sum 1\nh_count 1\n",
                      &error))
      << "buckets that are not cumulative";
  EXPECT_FALSE(
      parse_prom_text("# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n", &error))
      << "no +Inf bucket";
  EXPECT_TRUE(
      parse_prom_text("# HELP x a \\\\ b\n# TYPE x gauge\nx{a=\"q\\\"\\n\"} +Inf\n", &error))
      << error;
}

TEST(Metrics, CountersGaugesAndHistogramsRoundTrip) {
  MetricsRegistry r;
  auto& c = r.add("demo_requests_total", "Requests", MetricType::kCounter, {"model", "status"});
  auto& g = r.add("demo_speed", "Speed", MetricType::kGauge, {"model"});
  auto& h = r.add("demo_seconds", "Latency", MetricType::kHistogram, {"model"}, {0.1, 1, 10});
  c.counter({"a", "200"}).inc();
  c.counter({"a", "200"}).inc(2);
  c.counter({"b \"quoted\"\nline", "500"}).inc();
  g.gauge({"a"}).set(12.5);
  for (double v : {0.05, 0.1, 0.5, 3.0, 50.0}) {
    h.histogram({"a"}).observe(v);
  }
  std::string out;
  telemetry::PromText writer(out);
  r.render(writer);
  auto p = parsed_metrics(out);
  EXPECT_EQ(p.value("demo_requests_total", {{"model", "a"}, {"status", "200"}}), 3.0);
  EXPECT_EQ(p.value("demo_requests_total", {{"model", "b \"quoted\"\nline"}}), 1.0)
      << "label values are escaped and read back";
  EXPECT_EQ(p.value("demo_speed", {{"model", "a"}}), 12.5);
  EXPECT_EQ(p.value("demo_seconds_bucket", {{"le", "0.1"}}), 2.0) << "le is inclusive";
  EXPECT_EQ(p.value("demo_seconds_bucket", {{"le", "1"}}), 3.0);
  EXPECT_EQ(p.value("demo_seconds_bucket", {{"le", "10"}}), 4.0);
  EXPECT_EQ(p.value("demo_seconds_bucket", {{"le", "+Inf"}}), 5.0);
  EXPECT_EQ(p.value("demo_seconds_count"), 5.0);
  EXPECT_NEAR(*p.value("demo_seconds_sum"), 53.65, 1e-9);
  ASSERT_NE(p.family("demo_seconds"), nullptr);
  EXPECT_EQ(p.family("demo_seconds")->type, "histogram");
  EXPECT_EQ(p.family("demo_requests_total")->help, "Requests");
}

TEST(Metrics, ValuesAreFormattedAsTheFormatReadsThem) {
  EXPECT_EQ(telemetry::PromText::format_value(3), "3");
  EXPECT_EQ(telemetry::PromText::format_value(0.25), "0.25");
  EXPECT_EQ(telemetry::PromText::format_value(INFINITY), "+Inf");
  EXPECT_EQ(telemetry::PromText::format_value(-INFINITY), "-Inf");
  EXPECT_EQ(telemetry::PromText::format_value(NAN), "NaN");
  EXPECT_EQ(telemetry::PromText::format_value(1e20), "1e+20");
  EXPECT_EQ(telemetry::PromText::format_value(1795611616.352), "1795611616.352")
      << "a timestamp keeps its milliseconds";
  EXPECT_EQ(telemetry::PromText::format_value(0.1), "0.1") << "the shortest exact form";
}

TEST(Metrics, ConcurrentUpdatesAreAllCounted) {
  MetricsRegistry r;
  auto& c = r.add("demo_total", "n", MetricType::kCounter, {"model"});
  auto& h = r.add("demo_h", "n", MetricType::kHistogram, {"model"}, {1.0});
  std::vector<std::thread> threads;
  threads.reserve(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) {
        c.counter({"m" + std::to_string(i % 3)}).inc();
        h.histogram({"m"}).observe(t % 2 == 0 ? 0.5 : 2.0);
      }
    });
  }
  std::string out;
  telemetry::PromText writer(out);
  r.render(writer);  // a scrape while they run must still be well formed
  parsed_metrics(out);
  for (auto& t : threads) {
    t.join();
  }
  out.clear();
  r.render(writer);
  auto p = parsed_metrics(out);
  double total = 0;
  for (int m = 0; m < 3; ++m) {
    total += p.value("demo_total", {{"model", "m" + std::to_string(m)}}).value_or(0);
  }
  EXPECT_EQ(total, 40000.0);
  EXPECT_EQ(p.value("demo_h_count"), 40000.0);
  EXPECT_EQ(p.value("demo_h_bucket", {{"le", "1"}}), 20000.0);
}

TEST(TelemetryHub, RenderIsValidAndCountsWhatHappened) {
  TelemetryHub hub;
  hub.on_router_event({RouterEvent::Kind::kLoadStarted, "user.a", {}, {}});
  hub.on_router_event({RouterEvent::Kind::kLoadSucceeded, "user.a", "http://127.0.0.1:1", {}});
  hub.on_router_event({RouterEvent::Kind::kLoadStarted, "user.b", {}, {}});
  hub.on_router_event(
      {RouterEvent::Kind::kLoadFailed, "user.b", "boom", ErrorCode::kBackendExited});
  hub.on_router_event({RouterEvent::Kind::kEvictionPlanned, "user.a", "slot_limit", {}});
  hub.on_router_event({RouterEvent::Kind::kServerStopped, "user.a", "evicted", {}});
  hub.on_router_event({RouterEvent::Kind::kServerStopped, "user.c", "unload", {}});
  hub.on_router_event({RouterEvent::Kind::kServerCrashed, "user.c", {}, {}});
  RequestRecord r{"user.a", "chat/completions", 200, true, 0.5, 0.1, 10, 20, 40.0, 0, {}, 0, 0, {},
                  {}};
  hub.record_request(r);
  hub.record_request(r);
  hub.record_request(
      {"user.a", "chat/completions", 500, false, 0.01, 0, 0, 0, 0, 0, {}, 0, 0, {}, {}});

  RouterView view;
  view.waiting = {{"user.b", 3}};
  view.waiting_total = 3;
  view.loading = {"user.b", "user.b", "user.d"};
  view.published_ms = 1795611616352;
  SlotLimits limits = SlotLimits::uniform(2);
  auto p = parsed_metrics(hub.render(view, limits, {5, 2}, {{"user.a", 0.25}, {"user.x", 0.75}}));

  EXPECT_EQ(p.value("lemonade_requests_total", {{"model", "user.a"}, {"status", "200"}}), 2.0);
  EXPECT_EQ(p.value("lemonade_requests_total", {{"model", "user.a"}, {"status", "500"}}), 1.0);
  EXPECT_EQ(p.value("lemonade_generated_tokens_total", {{"model", "user.a"}}), 40.0)
      << "tokens of successful requests only";
  EXPECT_EQ(p.value("lemonade_prompt_tokens_total", {{"model", "user.a"}}), 20.0);
  EXPECT_EQ(p.value("lemonade_tokens_per_second", {{"model", "user.a"}}), 40.0);
  EXPECT_EQ(p.value("lemonade_time_to_first_token_seconds_count", {{"model", "user.a"}}), 2.0);
  EXPECT_EQ(p.value("lemonade_model_loads_total", {{"model", "user.a"}, {"result", "success"}}),
            1.0);
  EXPECT_EQ(p.value("lemonade_model_loads_total", {{"model", "user.b"}, {"result", "failure"}}),
            1.0);
  EXPECT_EQ(p.value("lemonade_model_load_duration_seconds_count", {{"model", "user.a"}}), 1.0);
  EXPECT_EQ(
      p.value("lemonade_model_evictions_total", {{"model", "user.a"}, {"reason", "slot_limit"}}),
      1.0);
  EXPECT_EQ(p.value("lemonade_model_evictions_total", {{"model", "user.c"}, {"reason", "unload"}}),
            1.0);
  EXPECT_EQ(p.value("lemonade_backend_crashes_total", {{"model", "user.c"}}), 1.0);
  EXPECT_EQ(p.value("lemonade_queue_depth", {{"model", "user.b"}}), 3.0);
  EXPECT_EQ(p.value("lemonade_open_connections"), 5.0);
  EXPECT_EQ(p.value("lemonade_open_streams"), 2.0);
  EXPECT_GT(p.value("lemonade_resident_memory_bytes").value_or(0), 0.0);
  EXPECT_GT(p.value("lemonade_open_fds").value_or(0), 0.0);
  EXPECT_EQ(p.value("lemonade_build_info"), 1.0);
  EXPECT_EQ(p.value("lemonade_max_loaded_models", {{"type", "llm"}}), 2.0);
  // The inference gateways' protocol.
  EXPECT_EQ(p.value("lemonade:num_requests_waiting"), 3.0);
  EXPECT_EQ(p.value("lemonade:num_requests_running"), 0.0);
  EXPECT_EQ(p.value("lemonade:kv_cache_usage_perc"), 0.75) << "the fullest server";
  EXPECT_EQ(p.value("lemonade:loaded_models_info", {{"running_lora_adapters", ""},
                                                    {"waiting_lora_adapters", "user.b,user.d"},
                                                    {"max_lora", "2"}}),
            1795611616.352)
      << "the value is when the set last changed";
}

TEST(TelemetryHub, NoSlotLimitIsALargeMaxLoraNeverMinusOne) {
  // A gateway reads running + waiting >= max_lora as a full server: -1 would
  // make a router with no limit look full to every scorer.
  TelemetryHub hub;
  RouterView view;
  view.published_ms = 1795611616352;
  auto p =
      parsed_metrics(hub.render(view, SlotLimits::uniform(SlotLimits::kUnlimited), {0, 0}, {}));
  EXPECT_EQ(p.value("lemonade:loaded_models_info", {{"running_lora_adapters", ""},
                                                    {"waiting_lora_adapters", ""},
                                                    {"max_lora", "2147483647"}}),
            1795611616.352);
}

TEST(TelemetryHub, RequestEventsAreBuiltOnlyWhileSomeoneFollows) {
  TelemetryHub hub;
  RequestRecord r{"user.a", "completions", 200, false, 0.2, 0, 1, 2, 0, 0, {}, 0, 0, {}, {}};
  hub.record_request(r);
  EXPECT_EQ(hub.events().last_id(), 0u) << "no follower, no event";
  auto follower = hub.events().follow(std::nullopt, 0);
  hub.record_request(r);
  auto items = follower->next(std::chrono::seconds(1));
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].value->type, "request");
  EXPECT_EQ(items[0].value->data["route"], "completions");
  EXPECT_EQ(items[0].value->data["completion_tokens"], 2);
}

}  // namespace
}  // namespace lemon::telemetry
