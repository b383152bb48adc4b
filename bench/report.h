// The benchmark report: rows for the printed table, the JSON document, and
// the targets from issue #4 marked met or missed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace bench {

struct Row {
  std::string section;
  std::string metric;
  std::optional<double> direct;
  std::optional<double> router;
  std::optional<double> delta;  // router - direct, or a ratio (see unit)
  std::string unit;
};

struct Target {
  std::string name;
  double value = 0;
  double limit = 0;
  bool at_most = true;  // value <= limit, else value >= limit
  std::string unit;
  bool met() const { return at_most ? value <= limit : value >= limit; }
};

class Report {
 public:
  void add(Row row) { rows_.push_back(std::move(row)); }
  void target(Target t) { targets_.push_back(std::move(t)); }
  nlohmann::json& data() { return data_; }

  void print() const;
  nlohmann::json to_json() const;

 private:
  std::vector<Row> rows_;
  std::vector<Target> targets_;
  nlohmann::json data_ = nlohmann::json::object();
};

// Checks a JSON report written by this tool (for the smoke test): returns an
// empty string when well-formed, else what is wrong.
std::string validate_report(const nlohmann::json& j);

}  // namespace bench
