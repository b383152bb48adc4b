// Metrics in the Prometheus text exposition format (version 0.0.4), for
// GET /metrics.
//
// Counter, Gauge and Histogram are lock-free to update (atomics), so a
// request pays only for a few atomic adds. A Family holds one metric per set
// of label values; finding a series takes a shared lock that only the first
// use of a new label set takes exclusively, so a scrape (which reads under the
// shared lock) never waits for requests, nor requests for it.
//
// PromText writes families and samples with escaping and number formatting
// as the format requires; scrape-time values (router gauges) are written
// with it directly.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include "lemon/core/mutex.h"

namespace lemon::telemetry {

using Labels = std::vector<std::pair<std::string, std::string>>;

class PromText {
 public:
  explicit PromText(std::string& out) : out_(out) {}
  // "# HELP" and "# TYPE" lines; type is counter, gauge or histogram.
  void family(std::string_view name, std::string_view help, std::string_view type);
  void sample(std::string_view name, const Labels& labels, double value);

  static std::string escape_label_value(std::string_view value);
  static std::string format_value(double value);

 private:
  std::string& out_;
};

class Counter {
 public:
  void inc(double by = 1.0) { value_.fetch_add(by, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  // `bounds`: increasing upper bounds; +Inf is implied.
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);

  struct Snapshot {
    std::vector<double> bounds;
    std::vector<std::uint64_t> cumulative;  // one per bound, then +Inf
    double sum = 0.0;
    std::uint64_t count = 0;
  };
  Snapshot snapshot() const;

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;  // per bound, then +Inf
  std::atomic<double> sum_{0.0};
  std::atomic<std::uint64_t> count_{0};
};

enum class MetricType { kCounter, kGauge, kHistogram };

// One named metric with label names, and a series per label-value set.
class Family {
 public:
  Family(std::string name, std::string help, MetricType type, std::vector<std::string> labels,
         std::vector<double> bounds = {});

  // The series for these label values (one per label name, in order),
  // created on first use. The reference stays valid for the Family's life.
  Counter& counter(const std::vector<std::string>& values);
  Gauge& gauge(const std::vector<std::string>& values);
  Histogram& histogram(const std::vector<std::string>& values);

  void render(PromText& out) const;
  const std::string& name() const { return name_; }

 private:
  struct Series {
    Counter counter;
    Gauge gauge;
    std::unique_ptr<Histogram> histogram;
  };
  Series& series(const std::vector<std::string>& values);

  const std::string name_;
  const std::string help_;
  const MetricType type_;
  const std::vector<std::string> labels_;
  const std::vector<double> bounds_;
  mutable SharedMutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Series>> series_ LEMON_GUARDED_BY(mu_);
};

// Families in registration order. Register during setup; update and render
// from any thread afterwards.
class MetricsRegistry {
 public:
  Family& add(std::string name, std::string help, MetricType type, std::vector<std::string> labels,
              std::vector<double> bounds = {});
  void render(PromText& out) const;

 private:
  std::vector<std::unique_ptr<Family>> families_;
};

// Bucket bounds for latencies in seconds (5 ms to 5 min) and load times.
std::vector<double> latency_buckets();
std::vector<double> load_buckets();

}  // namespace lemon::telemetry
