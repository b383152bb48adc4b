// Load generators for the benchmark: closed-loop request senders and stream
// readers. Each worker thread sends back-to-back; latencies are measured
// around the client call with steady_clock.
//
// Thread-safety: each call runs its own workers and returns when they finish.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace bench {

struct Samples {
  std::vector<double> values;
  void add(double v) { values.push_back(v); }
  void merge(const Samples& o) { values.insert(values.end(), o.values.begin(), o.values.end()); }
  // q in [0, 1]; 0 when empty. Sorts on first use.
  double quantile(double q);
  std::size_t size() const { return values.size(); }

 private:
  bool sorted_ = false;
};

struct RequestRun {
  Samples latency_us;
  double requests_per_s = 0;
  long errors = 0;
};

// `concurrency` workers POST `body` to 127.0.0.1:port`path` until `duration`.
RequestRun run_requests(int port, const std::string& path, const std::string& body, int concurrency,
                        std::chrono::milliseconds duration);

struct StreamRun {
  Samples chunk_latency_us;  // client read time - fake write time (fakes only)
  Samples ttfb_us;           // request sent -> first body byte
  double chunks_per_s = 0;
  long chunks = 0;
  long streams = 0;
  long errors = 0;
};

// `concurrency` workers open streams back-to-back until `duration` (each
// stream read to its end), or until each has done `max_streams_per_worker`.
StreamRun run_streams(int port, const std::string& path, const std::string& body, int concurrency,
                      std::chrono::milliseconds duration, int max_streams_per_worker);

}  // namespace bench
