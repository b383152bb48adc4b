#include "scenarios.h"

#include <atomic>
#include <optional>
#include <thread>

#include "httplib_proxy.h"
#include "lemon/net/upstream_client.h"
#include "load.h"

namespace bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

const char* kChat = "/v1/chat/completions";

std::string chat_body(const std::string& model, int tokens, bool stream, const Settings& s,
                      int chunk_delay_ms = 0) {
  json body = {{"model", model},
               {"messages", {{{"role", "user"}, {"content", "Tell me a story"}}}},
               {"max_tokens", tokens},
               {"stream", stream}};
  if (s.fake) {
    body["lemon_fake"] = {{"tokens", tokens}, {"stream_chunk_delay_ms", chunk_delay_ms}};
  }
  return body.dump();
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

Samples health_latency(int port, int count) {
  lemon::net::UpstreamClient client("127.0.0.1", port);
  lemon::net::UpstreamRequest req;
  req.method = "GET";
  req.path = "/api/v1/health";
  Samples s;
  for (int i = 0; i < count; ++i) {
    auto t0 = Clock::now();
    auto r = client.send(req, {});
    if (r.ok() && r->status == 200) {
      s.add(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
  }
  return s;
}

// Streams that stay open until stop(): the fake writes a chunk every
// `delay_ms` for a very long time.
class OpenStreams {
 public:
  OpenStreams(int port, const std::string& model, int count, const Settings& s)
      : client_("127.0.0.1", port, static_cast<std::size_t>(count)),
        body_(chat_body(model, 1'000'000, true, s, 50)) {
    req_.path = kChat;
    req_.content_type = "application/json";
    req_.body = body_;
    for (int i = 0; i < count; ++i) {
      threads_.emplace_back([this] {
        bool counted = false;
        (void)client_.stream(
            req_, {}, [](const lemon::net::UpstreamHead&) { return true; },
            [&](std::string_view) {
              if (!counted) {
                counted = true;
                ++open_;
              }
              return !stop_.load();
            });
      });
    }
    auto deadline = Clock::now() + std::chrono::seconds(60);
    while (open_.load() < count && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ~OpenStreams() {
    stop_ = true;
    for (auto& t : threads_) {
      t.join();
    }
  }
  int open() const { return open_.load(); }

 private:
  lemon::net::UpstreamClient client_;
  std::string body_;
  lemon::net::UpstreamRequest req_;
  std::atomic<bool> stop_{false};
  std::atomic<int> open_{0};
  std::vector<std::thread> threads_;
};

}  // namespace

void measure_non_streaming(BenchEnv& env, const Settings& s, Report& report) {
  int direct = env.start_direct_backend();
  int router = env.start_router({"--max-loaded-models", "-1", "--log-level", "warning"});
  std::string body = chat_body("user.bench", 1, false, s);
  post_json(router, kChat, json::parse(body));  // load it
  json data = json::object();
  for (int c : {1, 16, 64}) {
    RequestRun d = run_requests(direct, kChat, body, c, s.duration);
    RequestRun r = run_requests(router, kChat, body, c, s.duration);
    std::string tag = "c=" + std::to_string(c);
    double p50d = d.latency_us.quantile(0.5), p50r = r.latency_us.quantile(0.5);
    double p99d = d.latency_us.quantile(0.99), p99r = r.latency_us.quantile(0.99);
    double ratio = d.requests_per_s > 0 ? r.requests_per_s / d.requests_per_s : 0;
    report.add({"non-streaming", tag + " latency p50", p50d, p50r, p50r - p50d, "us"});
    report.add({"non-streaming", tag + " latency p99", p99d, p99r, p99r - p99d, "us"});
    report.add({"non-streaming", tag + " throughput", d.requests_per_s, r.requests_per_s, ratio,
                "req/s (ratio)"});
    data[tag] = {
        {"direct",
         {{"p50_us", p50d}, {"p99_us", p99d}, {"rps", d.requests_per_s}, {"errors", d.errors}}},
        {"router",
         {{"p50_us", p50r}, {"p99_us", p99r}, {"rps", r.requests_per_s}, {"errors", r.errors}}}};
    if (c == 1) {
      report.target({"added p50 latency, non-streaming, c=1", p50r - p50d, 100, true, "us"});
      report.target({"added p99 latency, non-streaming, c=1", p99r - p99d, 1000, true, "us"});
    } else {
      report.target({"throughput ratio, non-streaming, " + tag, ratio, 0.9, false, "x"});
    }
  }
  report.data()["non_streaming"] = data;
}

void measure_queued(BenchEnv& env, const Settings& s, Report& report) {
  constexpr int kClients = 8;
  const std::string body = chat_body("user.bench", 1, false, s);
  json data = json::object();
  if (!s.fake) {
    // Issue #27: one llama.cpp slot on both sides and eight clients, so
    // seven requests always wait: in llama-server's own queue when direct,
    // in the router's (and one in llama-server's) when routed. Only a real
    // backend: the fake answers at once, so its one slot is never what
    // limits it, while the router holds each request to the slot.
    int direct = env.start_direct_backend(1);
    int router = env.start_router(
        {"--max-loaded-models", "-1", "--log-level", "warning", "--parallel", "1"});
    post_json(router, kChat, json::parse(body));  // load it
    RequestRun d = run_requests(direct, kChat, body, kClients, s.duration);
    RequestRun r = run_requests(router, kChat, body, kClients, s.duration);
    const double ratio = d.requests_per_s > 0 ? r.requests_per_s / d.requests_per_s : 0;
    report.add({"queued", "c=8, one slot: throughput", d.requests_per_s, r.requests_per_s, ratio,
                "req/s (ratio)"});
    data["non_streaming_c8"] = {{"direct_rps", d.requests_per_s},
                                {"router_rps", r.requests_per_s},
                                {"ratio", ratio},
                                {"errors", d.errors + r.errors}};
    report.target({"throughput ratio, queued c=8, one slot", ratio, 0.95, false, "x"});
    env.stop_router();
    env.stop_direct_backend();
  }

  // Time to first token with eight streams at once and a slot for each.
  int direct = env.start_direct_backend();
  int router = env.start_router({"--max-loaded-models", "-1", "--log-level", "warning"});
  post_json(router, kChat, json::parse(body));
  const std::string stream = chat_body("user.bench", 8, true, s);
  StreamRun ds = run_streams(direct, kChat, stream, kClients, s.duration, 1'000'000);
  StreamRun rs = run_streams(router, kChat, stream, kClients, s.duration, 1'000'000);
  const double p50d = ds.ttfb_us.quantile(0.5);
  const double p50r = rs.ttfb_us.quantile(0.5);
  report.add({"time to 1st byte", "c=8 streams: TTFB p50", p50d, p50r, p50r - p50d, "us"});
  data["ttfb_c8"] = {{"direct_p50_us", p50d},
                     {"router_p50_us", p50r},
                     {"direct_p99_us", ds.ttfb_us.quantile(0.99)},
                     {"router_p99_us", rs.ttfb_us.quantile(0.99)},
                     {"errors", ds.errors + rs.errors}};
  report.target({"added TTFB p50, c=8 streams", p50r - p50d, 500, true, "us"});
  report.data()["queued"] = data;
  env.stop_direct_backend();
}

void measure_http_layer(BenchEnv& env, const Settings& s, Report& report) {
  int direct = env.start_direct_backend();
  int router = env.start_router({"--max-loaded-models", "-1", "--log-level", "warning"});
  std::string body = chat_body("user.bench", 1, false, s);
  post_json(router, kChat, json::parse(body));  // load it
  HttplibProxy proxy;
  const int httplib_port = proxy.start(direct, 64);
  if (httplib_port == 0) {
    report.data()["http_layer"] = {{"error", "the cpp-httplib proxy could not listen"}};
    return;
  }
  json data = json::object();
  for (int c : {1, 16}) {
    RequestRun d = run_requests(direct, kChat, body, c, s.duration);
    RequestRun r = run_requests(router, kChat, body, c, s.duration);
    RequestRun h = run_requests(httplib_port, kChat, body, c, s.duration);
    const std::string tag = "c=" + std::to_string(c);
    const double p50d = d.latency_us.quantile(0.5);
    const double added_r = r.latency_us.quantile(0.5) - p50d;
    const double added_h = h.latency_us.quantile(0.5) - p50d;
    const double ratio_r = d.requests_per_s > 0 ? r.requests_per_s / d.requests_per_s : 0;
    const double ratio_h = d.requests_per_s > 0 ? h.requests_per_s / d.requests_per_s : 0;
    report.add({"http layer", tag + " added p50: cpp-httplib proxy vs ours", added_h, added_r,
                added_r - added_h, "us"});
    report.add({"http layer", tag + " throughput / direct: cpp-httplib proxy vs ours", ratio_h,
                ratio_r, ratio_r - ratio_h, "x"});
    data[tag] = {{"direct_p50_us", p50d},
                 {"router_added_p50_us", added_r},
                 {"httplib_added_p50_us", added_h},
                 {"router_throughput_ratio", ratio_r},
                 {"httplib_throughput_ratio", ratio_h},
                 {"errors", d.errors + r.errors + h.errors}};
  }
  report.data()["http_layer"] = data;
}

void measure_streaming(BenchEnv& env, const Settings& s, Report& report) {
  int direct = env.start_direct_backend();
  int router = env.start_router({"--max-loaded-models", "-1", "--log-level", "warning"});
  post_json(router, kChat, json::parse(chat_body("user.bench", 1, false, s)));
  json data = json::object();
  const int fast_tokens = s.fake ? (s.quick ? 200 : 2000) : 256;
  std::string fast = chat_body("user.bench", fast_tokens, true, s);
  for (int c : {1, 64}) {
    StreamRun d = run_streams(direct, kChat, fast, c, s.duration, 1'000'000);
    double cpu0 = cpu_seconds(env.router_pid());
    StreamRun r = run_streams(router, kChat, fast, c, s.duration, 1'000'000);
    double cpu = cpu_seconds(env.router_pid()) - cpu0;
    std::string tag = "c=" + std::to_string(c);
    double ratio = d.chunks_per_s > 0 ? r.chunks_per_s / d.chunks_per_s : 0;
    report.add({"streaming", tag + " " + std::to_string(fast_tokens) + "-chunk streams",
                d.chunks_per_s, r.chunks_per_s, ratio, "chunks/s (ratio)"});
    double cpu_per_k = r.chunks > 0 ? cpu * 1000.0 / static_cast<double>(r.chunks) * 1000.0 : 0;
    report.add({"streaming", tag + " router CPU per 1000 chunks", std::nullopt, cpu_per_k,
                std::nullopt, "ms"});
    data["fast_" + tag] = {{"direct_chunks_per_s", d.chunks_per_s},
                           {"router_chunks_per_s", r.chunks_per_s},
                           {"router_cpu_ms_per_1000_chunks", cpu_per_k},
                           {"errors", d.errors + r.errors}};
    if (c == 64) {
      report.target({"throughput ratio, streaming, c=64", ratio, 0.9, false, "x"});
    }
  }
  if (s.fake) {
    // Per-chunk latency: the fake stamps each chunk when it writes it.
    std::string slow = chat_body("user.bench", s.quick ? 20 : 200, true, s, 5);
    for (int c : {1, 64}) {
      StreamRun d = run_streams(direct, kChat, slow, c, s.duration, 1'000'000);
      StreamRun r = run_streams(router, kChat, slow, c, s.duration, 1'000'000);
      std::string tag = "c=" + std::to_string(c);
      double p50d = d.chunk_latency_us.quantile(0.5), p50r = r.chunk_latency_us.quantile(0.5);
      double p99d = d.chunk_latency_us.quantile(0.99), p99r = r.chunk_latency_us.quantile(0.99);
      report.add({"streaming", tag + " chunk every 5 ms: chunk latency p50", p50d, p50r,
                  p50r - p50d, "us"});
      report.add({"streaming", tag + " chunk every 5 ms: chunk latency p99", p99d, p99r,
                  p99r - p99d, "us"});
      data["slow_" + tag] = {{"direct_p50_us", p50d},
                             {"router_p50_us", p50r},
                             {"direct_p99_us", p99d},
                             {"router_p99_us", p99r},
                             {"chunks", r.chunk_latency_us.size()}};
      report.target({"added per-chunk latency p99, " + tag, p99r - p99d, 1000, true, "us"});
    }
  }
  std::string short_stream = chat_body("user.bench", 4, true, s);
  StreamRun d = run_streams(direct, kChat, short_stream, 1, s.duration, 1'000'000);
  StreamRun r = run_streams(router, kChat, short_stream, 1, s.duration, 1'000'000);
  double p50d = d.ttfb_us.quantile(0.5), p50r = r.ttfb_us.quantile(0.5);
  double p99d = d.ttfb_us.quantile(0.99), p99r = r.ttfb_us.quantile(0.99);
  report.add({"time to 1st byte", "stream TTFB p50", p50d, p50r, p50r - p50d, "us"});
  report.add({"time to 1st byte", "stream TTFB p99", p99d, p99r, p99r - p99d, "us"});
  data["ttfb"] = {{"direct_p50_us", p50d},
                  {"router_p50_us", p50r},
                  {"direct_p99_us", p99d},
                  {"router_p99_us", p99r}};
  report.data()["streaming"] = data;
  env.stop_direct_backend();
}

void measure_model_switch(BenchEnv& env, const Settings& s, Report& report) {
  // The backend's own start (spawn to healthy) and stop (SIGTERM to exit),
  // measured directly in the same run: the switch's baseline.
  Samples ready_ms;
  Samples own_stop_ms;
  for (int i = 0; i < s.switches; ++i) {
    auto own = env.time_direct_start_stop();
    ready_ms.add(own.start_ms);
    own_stop_ms.add(own.stop_ms);
  }
  const double ready_p50 = ready_ms.quantile(0.5);
  int router = env.start_router({"--max-loaded-models", "1", "--log-level", "warning"});
  post_json(router, kChat, json::parse(chat_body("user.a", 1, false, s)));
  Samples total_ms;
  Samples added_ms;
  for (int i = 0; i < s.switches; ++i) {
    std::string model = i % 2 == 0 ? "user.b" : "user.a";
    auto t0 = Clock::now();
    int status = post_json(router, kChat, json::parse(chat_body(model, 1, false, s)));
    double t = ms_since(t0);
    if (status != 200) {
      continue;
    }
    total_ms.add(t);
    added_ms.add(t - ready_p50);
  }
  Samples stop_ms;
  for (int i = 0; i < s.switches / 2 + 1; ++i) {
    post_json(router, "/api/v1/load", {{"model_name", "user.a"}});
    auto t0 = Clock::now();
    post_json(router, "/api/v1/unload", {{"model_name", "user.a"}});
    stop_ms.add(ms_since(t0));
  }
  report.add({"model switch", "request that switches models p50", std::nullopt,
              total_ms.quantile(0.5), std::nullopt, "ms"});
  report.add({"model switch", "backend's own start-to-ready p50 (spawned directly)", ready_p50,
              std::nullopt, std::nullopt, "ms"});
  report.add({"model switch", "backend's own stop p50 (SIGTERM to exit, directly)",
              own_stop_ms.quantile(0.5), std::nullopt, std::nullopt, "ms"});
  report.add({"model switch", "router's added time per switch p50", std::nullopt,
              added_ms.quantile(0.5), std::nullopt, "ms"});
  report.add({"model switch", "router's added time per switch p99", std::nullopt,
              added_ms.quantile(0.99), std::nullopt, "ms"});
  report.target({"added time per model switch (p50)", added_ms.quantile(0.5), 5, true, "ms"});
  report.target({"added time per model switch (p99)", added_ms.quantile(0.99), 10, true, "ms"});
  report.add({"model switch", "unload (evict + stop) p50", std::nullopt, stop_ms.quantile(0.5),
              std::nullopt, "ms"});
  report.data()["model_switch"] = {{"switches", total_ms.size()},
                                   {"total_p50_ms", total_ms.quantile(0.5)},
                                   {"backend_ready_p50_ms", ready_p50},
                                   {"backend_stop_p50_ms", own_stop_ms.quantile(0.5)},
                                   {"added_p50_ms", added_ms.quantile(0.5)},
                                   {"added_p99_ms", added_ms.quantile(0.99)},
                                   {"unload_p50_ms", stop_ms.quantile(0.5)}};
}

void measure_control_plane(BenchEnv& env, const Settings& s, Report& report) {
  const int samples = s.quick ? 20 : 500;
  int router = env.start_router({"--max-loaded-models", "-1", "--log-level", "warning"});
  post_json(router, kChat, json::parse(chat_body("user.bench", 1, false, s)));
  Samples idle = health_latency(router, samples);
  long rss_streams = -1;
  Samples busy;
  int opened = 0;
  {
    OpenStreams streams(router, "user.bench", s.streams, s);
    opened = streams.open();
    busy = health_latency(router, samples);
    rss_streams = rss_kib(env.router_pid());
  }
  std::string tag = std::to_string(opened) + " open streams";
  report.add(
      {"control plane", "/health p50, idle", std::nullopt, idle.quantile(0.5), std::nullopt, "us"});
  report.add({"control plane", "/health p50, " + tag, std::nullopt, busy.quantile(0.5),
              std::nullopt, "us"});
  report.add({"control plane", "/health p99, " + tag, std::nullopt, busy.quantile(0.99),
              std::nullopt, "us"});
  report.add(
      {"memory", "router RSS, " + tag, std::nullopt, rss_streams / 1024.0, std::nullopt, "MiB"});
  report.target({"/health p99 with " + tag, busy.quantile(0.99) / 1000.0, 5, true, "ms"});
  report.target({"RSS with " + tag, rss_streams / 1024.0, 64, true, "MiB"});

  // A load that waits for a busy server to drain.
  router = env.start_router({"--max-loaded-models", "1", "--log-level", "info"});
  post_json(router, kChat, json::parse(chat_body("user.a", 1, false, s)));
  Samples waiting;
  {
    std::optional<OpenStreams> stream;
    stream.emplace(router, "user.a", 1, s);
    std::thread load([&] { post_json(router, "/api/v1/load", {{"model_name", "user.b"}}); });
    auto deadline = Clock::now() + std::chrono::seconds(30);
    bool draining = false;
    while (!draining && Clock::now() < deadline) {
      for (const auto& line : env.router_log(50)) {
        draining = draining || line.find("waiting for 'user.a'") != std::string::npos;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    waiting = health_latency(router, samples);
    stream.reset();  // the drain completes and the load goes ahead
    load.join();
  }
  report.add({"control plane", "/health p50, load waiting for a drain", std::nullopt,
              waiting.quantile(0.5), std::nullopt, "us"});
  report.add({"control plane", "/health p99, load waiting for a drain", std::nullopt,
              waiting.quantile(0.99), std::nullopt, "us"});
  report.data()["control_plane"] = {{"streams", opened},
                                    {"health_idle_p50_us", idle.quantile(0.5)},
                                    {"health_streams_p50_us", busy.quantile(0.5)},
                                    {"health_streams_p99_us", busy.quantile(0.99)},
                                    {"health_drain_wait_p50_us", waiting.quantile(0.5)},
                                    {"health_drain_wait_p99_us", waiting.quantile(0.99)},
                                    {"rss_streams_kib", rss_streams}};
}

void measure_memory(BenchEnv& env, const Settings& s, Report& report) {
  int router = env.start_router({"--max-loaded-models", "-1", "--log-level", "warning"});
  long idle = rss_kib(env.router_pid());
  for (int i = 1; i <= 5; ++i) {
    post_json(router, "/api/v1/load", {{"model_name", "user.m" + std::to_string(i)}});
  }
  long five = rss_kib(env.router_pid());
  (void)s;
  report.add({"memory", "router RSS, idle", std::nullopt, idle / 1024.0, std::nullopt, "MiB"});
  report.add({"memory", "router RSS, 5 backends loaded", std::nullopt, five / 1024.0, std::nullopt,
              "MiB"});
  report.target({"idle RSS", idle / 1024.0, 15, true, "MiB"});
  report.data()["memory"] = {{"idle_kib", idle}, {"five_backends_kib", five}};
}

}  // namespace bench
