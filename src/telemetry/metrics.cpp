#include "lemon/telemetry/metrics.h"
#include "lemon/core/mutex.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace lemon::telemetry {

void PromText::family(std::string_view name, std::string_view help, std::string_view type) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  for (char c : help) {  // HELP escapes backslash and newline only
    if (c == '\\') {
      out_ += "\\\\";
    } else if (c == '\n') {
      out_ += "\\n";
    } else {
      out_ += c;
    }
  }
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void PromText::sample(std::string_view name, const Labels& labels, double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!first) {
        out_ += ',';
      }
      first = false;
      out_ += k;
      out_ += "=\"";
      out_ += escape_label_value(v);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += format_value(value);
  out_ += '\n';
}

std::string PromText::escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string PromText::format_value(double value) {
  if (std::isnan(value)) {
    return "NaN";
  }
  if (std::isinf(value)) {
    return value > 0 ? "+Inf" : "-Inf";
  }
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", value);
    return buf;
  }
  // The shortest form that reads back as the same double.
  char buf[40];
  for (int precision = 9; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value) {
      break;
    }
  }
  return buf;
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      buckets_(std::make_unique<std::atomic<std::uint64_t>[]>(bounds_.size() + 1)) {}

void Histogram::observe(double value) {
  std::size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) {
    ++i;
  }
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.bounds = bounds_;
  std::uint64_t running = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  // The count is the +Inf bucket, so the two always agree in one scrape.
  s.count = running;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

Family::Family(std::string name, std::string help, MetricType type, std::vector<std::string> labels,
               std::vector<double> bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      labels_(std::move(labels)),
      bounds_(std::move(bounds)) {}

Family::Series& Family::series(const std::vector<std::string>& values) {
  {
    ReaderLock lock(mu_);
    if (auto it = series_.find(values); it != series_.end()) {
      return *it->second;
    }
  }
  SharedMutexLock lock(mu_);
  auto& slot = series_[values];
  if (!slot) {
    slot = std::make_unique<Series>();
    if (type_ == MetricType::kHistogram) {
      slot->histogram = std::make_unique<Histogram>(bounds_);
    }
  }
  return *slot;
}

Counter& Family::counter(const std::vector<std::string>& values) {
  return series(values).counter;
}

Gauge& Family::gauge(const std::vector<std::string>& values) {
  return series(values).gauge;
}

Histogram& Family::histogram(const std::vector<std::string>& values) {
  return *series(values).histogram;
}

void Family::render(PromText& out) const {
  const char* type = type_ == MetricType::kCounter ? "counter"
                     : type_ == MetricType::kGauge ? "gauge"
                                                   : "histogram";
  out.family(name_, help_, type);
  ReaderLock lock(mu_);
  for (const auto& [values, s] : series_) {
    Labels labels;
    for (std::size_t i = 0; i < labels_.size() && i < values.size(); ++i) {
      labels.emplace_back(labels_[i], values[i]);
    }
    if (type_ == MetricType::kCounter) {
      out.sample(name_, labels, s->counter.value());
    } else if (type_ == MetricType::kGauge) {
      out.sample(name_, labels, s->gauge.value());
    } else {
      auto snap = s->histogram->snapshot();
      for (std::size_t i = 0; i <= snap.bounds.size(); ++i) {
        Labels with_le = labels;
        with_le.emplace_back(
            "le", i < snap.bounds.size() ? PromText::format_value(snap.bounds[i]) : "+Inf");
        out.sample(name_ + "_bucket", with_le, static_cast<double>(snap.cumulative[i]));
      }
      out.sample(name_ + "_sum", labels, snap.sum);
      out.sample(name_ + "_count", labels, static_cast<double>(snap.count));
    }
  }
}

Family& MetricsRegistry::add(std::string name, std::string help, MetricType type,
                             std::vector<std::string> labels, std::vector<double> bounds) {
  families_.push_back(std::make_unique<Family>(std::move(name), std::move(help), type,
                                               std::move(labels), std::move(bounds)));
  return *families_.back();
}

void MetricsRegistry::render(PromText& out) const {
  for (const auto& f : families_) {
    f->render(out);
  }
}

std::vector<double> latency_buckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
}

std::vector<double> load_buckets() {
  return {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600};
}

}  // namespace lemon::telemetry
