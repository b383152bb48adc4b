#include "report.h"

#include <cstdio>

namespace bench {
namespace {

std::string fmt(const std::optional<double>& v) {
  if (!v) {
    return "-";
  }
  char buf[32];
  double a = *v < 0 ? -*v : *v;
  std::snprintf(buf, sizeof buf, a >= 100 ? "%.0f" : (a >= 10 ? "%.1f" : "%.2f"), *v);
  return buf;
}

nlohmann::json opt(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

void Report::print() const {
  std::printf("\n%-16s %-44s %12s %12s %12s  %s\n", "section", "metric", "direct", "router",
              "added/ratio", "unit");
  std::printf("%s\n", std::string(110, '-').c_str());
  for (const auto& r : rows_) {
    std::printf("%-16s %-44s %12s %12s %12s  %s\n", r.section.c_str(), r.metric.c_str(),
                fmt(r.direct).c_str(), fmt(r.router).c_str(), fmt(r.delta).c_str(), r.unit.c_str());
  }
  std::printf("\n%-56s %12s %14s  %s\n", "target", "measured", "limit", "status");
  std::printf("%s\n", std::string(96, '-').c_str());
  for (const auto& t : targets_) {
    std::string limit = std::string(t.at_most ? "<= " : ">= ") + fmt(t.limit) + " " + t.unit;
    std::printf("%-56s %12s %14s  %s\n", t.name.c_str(), fmt(t.value).c_str(), limit.c_str(),
                t.met() ? "met" : "MISSED");
  }
  std::fflush(stdout);
}

nlohmann::json Report::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : rows_) {
    rows.push_back({{"section", r.section},
                    {"metric", r.metric},
                    {"direct", opt(r.direct)},
                    {"router", opt(r.router)},
                    {"delta", opt(r.delta)},
                    {"unit", r.unit}});
  }
  nlohmann::json targets = nlohmann::json::array();
  for (const auto& t : targets_) {
    targets.push_back({{"name", t.name},
                       {"value", t.value},
                       {"limit", t.limit},
                       {"comparison", t.at_most ? "<=" : ">="},
                       {"unit", t.unit},
                       {"met", t.met()}});
  }
  nlohmann::json out = data_;
  out["rows"] = std::move(rows);
  out["targets"] = std::move(targets);
  return out;
}

std::string validate_report(const nlohmann::json& j) {
  if (!j.is_object()) {
    return "not a JSON object";
  }
  for (const char* key : {"machine", "mode", "backend", "rows", "targets"}) {
    if (!j.contains(key)) {
      return std::string("missing key '") + key + "'";
    }
  }
  if (!j["rows"].is_array() || j["rows"].empty()) {
    return "'rows' must be a non-empty array";
  }
  for (const auto& r : j["rows"]) {
    for (const char* key : {"section", "metric", "direct", "router", "delta", "unit"}) {
      if (!r.contains(key)) {
        return std::string("a row lacks '") + key + "'";
      }
    }
    if (!r["router"].is_number() && !r["router"].is_null()) {
      return "a row's 'router' is neither a number nor null";
    }
  }
  if (!j["targets"].is_array()) {
    return "'targets' must be an array";
  }
  for (const auto& t : j["targets"]) {
    if (!t.contains("name") || !t["value"].is_number() || !t["met"].is_boolean()) {
      return "a target lacks name/value/met";
    }
  }
  return "";
}

}  // namespace bench
