// A strict reader of the Prometheus text exposition format (0.0.4), for
// tests: it parses what GET /metrics answers and checks it against the
// format's rules, so a test can both read values and fail on bad output.
//
// Checked: every line is a HELP, TYPE, blank or sample line; metric and label
// names are valid; label values use only the \\, \" and \n escapes; values
// are floats, +Inf, -Inf or NaN; a family's TYPE comes before its samples and
// appears once; a sample belongs to a declared family (histograms:
// name_bucket with an `le` label, name_sum, name_count); no series repeats;
// histogram buckets are cumulative, end with le="+Inf", and +Inf equals
// _count.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lemon::testing {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0.0;
};

struct PromFamily {
  std::string name;
  std::string type;  // counter, gauge, histogram, summary, untyped
  std::string help;
  std::vector<PromSample> samples;
};

struct PromText {
  std::vector<PromFamily> families;  // in order of appearance

  const PromFamily* family(const std::string& name) const;
  // The value of the sample `name` whose labels include `labels`; nullopt if
  // none, or if more than one matches.
  std::optional<double> value(const std::string& name,
                              const std::map<std::string, std::string>& labels = {}) const;
};

// The parsed text, or the first problem (with its line number) in *error.
std::optional<PromText> parse_prom_text(const std::string& text, std::string* error);

}  // namespace lemon::testing
