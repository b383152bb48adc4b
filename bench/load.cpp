#include "load.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "bench_env.h"
#include "lemon/net/upstream_client.h"

namespace bench {

using Clock = std::chrono::steady_clock;

double Samples::quantile(double q) {
  if (values.empty()) {
    return 0.0;
  }
  if (!sorted_) {
    std::sort(values.begin(), values.end());
    sorted_ = true;
  }
  auto idx = static_cast<std::size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(idx, values.size() - 1)];
}

RequestRun run_requests(int port, const std::string& path, const std::string& body, int concurrency,
                        std::chrono::milliseconds duration) {
  lemon::net::UpstreamClient client("127.0.0.1", port, static_cast<std::size_t>(concurrency));
  lemon::net::UpstreamRequest req;
  req.path = path;
  req.content_type = "application/json";
  req.body = body;
  // Warm the connection pool so connection setup is not measured.
  for (int i = 0; i < concurrency; ++i) {
    (void)client.send(req, {});
  }
  std::vector<Samples> per_worker(static_cast<std::size_t>(concurrency));
  std::atomic<long> errors{0};
  const auto start = Clock::now();
  const auto end = start + duration;
  std::vector<std::thread> workers;
  for (int w = 0; w < concurrency; ++w) {
    workers.emplace_back([&, w] {
      Samples& s = per_worker[static_cast<std::size_t>(w)];
      while (Clock::now() < end) {
        auto t0 = Clock::now();
        auto resp = client.send(req, {});
        auto t1 = Clock::now();
        if (!resp.ok() || resp->status != 200) {
          ++errors;
          continue;
        }
        s.add(std::chrono::duration<double, std::micro>(t1 - t0).count());
      }
    });
  }
  for (auto& t : workers) {
    t.join();
  }
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  RequestRun run;
  for (auto& s : per_worker) {
    run.latency_us.merge(s);
  }
  run.errors = errors.load();
  run.requests_per_s = static_cast<double>(run.latency_us.size()) / elapsed;
  return run;
}

namespace {

// Each "fake_ts_ns":<n> in `piece` is one chunk the fake stamped when it
// wrote it; returns how many chunks the piece holds.
long stamp_chunks(std::string_view piece, long long read_ns, Samples& latency, bool& stamped) {
  static constexpr std::string_view kKey = "\"fake_ts_ns\":";
  long chunks = 0;
  for (std::size_t pos = piece.find(kKey); pos != std::string_view::npos;
       pos = piece.find(kKey, pos + kKey.size())) {
    long long ts = std::strtoll(piece.data() + pos + kKey.size(), nullptr, 10);
    latency.add(static_cast<double>(read_ns - ts) / 1000.0);
    ++chunks;
    stamped = true;
  }
  if (!stamped) {
    // A real backend: count SSE events instead.
    for (std::size_t pos = piece.find("data: "); pos != std::string_view::npos;
         pos = piece.find("data: ", pos + 6)) {
      ++chunks;
    }
  }
  return chunks;
}

}  // namespace

StreamRun run_streams(int port, const std::string& path, const std::string& body, int concurrency,
                      std::chrono::milliseconds duration, int max_streams_per_worker) {
  lemon::net::UpstreamClient client("127.0.0.1", port, static_cast<std::size_t>(concurrency));
  lemon::net::UpstreamRequest req;
  req.path = path;
  req.content_type = "application/json";
  req.body = body;
  struct Worker {
    Samples latency;
    Samples ttfb;
    long chunks = 0;
    long streams = 0;
    long errors = 0;
  };
  std::vector<Worker> per_worker(static_cast<std::size_t>(concurrency));
  const auto start = Clock::now();
  const auto end = start + duration;
  std::vector<std::thread> workers;
  for (int w = 0; w < concurrency; ++w) {
    workers.emplace_back([&, w] {
      Worker& me = per_worker[static_cast<std::size_t>(w)];
      for (int n = 0; n < max_streams_per_worker && Clock::now() < end; ++n) {
        bool first = true;
        bool stamped = false;
        auto t0 = Clock::now();
        auto st = client.stream(
            req, {}, [](const lemon::net::UpstreamHead& h) { return h.status == 200; },
            [&](std::string_view piece) {
              long long now = mono_ns();
              if (first) {
                me.ttfb.add(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
                first = false;
              }
              me.chunks += stamp_chunks(piece, now, me.latency, stamped);
              return true;
            });
        if (st.ok()) {
          ++me.streams;
        } else {
          ++me.errors;
        }
      }
    });
  }
  for (auto& t : workers) {
    t.join();
  }
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  StreamRun run;
  for (auto& w : per_worker) {
    run.chunk_latency_us.merge(w.latency);
    run.ttfb_us.merge(w.ttfb);
    run.chunks += w.chunks;
    run.streams += w.streams;
    run.errors += w.errors;
  }
  run.chunks_per_s = static_cast<double>(run.chunks) / elapsed;
  return run;
}

}  // namespace bench
