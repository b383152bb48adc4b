#include "support/prometheus_text.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>

namespace lemon::testing {
namespace {

bool name_char(char c, bool first, bool colon_ok) {
  const bool alpha =
      (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_ok && c == ':');
  return alpha || (!first && c >= '0' && c <= '9');
}

bool valid_name(const std::string& s, bool colon_ok) {
  if (s.empty()) {
    return false;
  }
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!name_char(s[i], i == 0, colon_ok)) {
      return false;
    }
  }
  return true;
}

std::optional<double> parse_value(const std::string& s) {
  if (s == "+Inf" || s == "Inf") {
    return std::numeric_limits<double>::infinity();
  }
  if (s == "-Inf") {
    return -std::numeric_limits<double>::infinity();
  }
  if (s == "NaN") {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (s.empty()) {
    return std::nullopt;
  }
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (*end != '\0') {
    return std::nullopt;
  }
  return v;
}

struct Reader {
  const std::string& line;
  std::size_t pos = 0;
  std::string error;

  bool at_end() const { return pos >= line.size(); }
  std::string name(bool colon_ok) {
    std::size_t start = pos;
    while (pos < line.size() && name_char(line[pos], pos == start, colon_ok)) {
      ++pos;
    }
    return line.substr(start, pos - start);
  }
  bool labels(std::map<std::string, std::string>& out) {
    ++pos;  // '{'
    while (pos < line.size() && line[pos] != '}') {
      std::string key = name(false);
      if (key.empty() || pos >= line.size() || line[pos] != '=') {
        error = "bad label name";
        return false;
      }
      ++pos;
      if (pos >= line.size() || line[pos] != '"') {
        error = "label value not quoted";
        return false;
      }
      ++pos;
      std::string value;
      bool closed = false;
      while (pos < line.size()) {
        char c = line[pos++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\') {
          if (pos >= line.size()) {
            break;
          }
          char e = line[pos++];
          if (e == '\\' || e == '"') {
            value += e;
          } else if (e == 'n') {
            value += '\n';
          } else {
            error = "bad escape in a label value";
            return false;
          }
        } else if (c == '\n') {
          error = "raw newline in a label value";
          return false;
        } else {
          value += c;
        }
      }
      if (!closed) {
        error = "unterminated label value";
        return false;
      }
      if (!out.emplace(key, value).second) {
        error = "label '" + key + "' repeated";
        return false;
      }
      if (pos < line.size() && line[pos] == ',') {
        ++pos;
      }
    }
    if (pos >= line.size()) {
      error = "unterminated label set";
      return false;
    }
    ++pos;  // '}'
    return true;
  }
};

// The family a sample name belongs to, given the declared types.
PromFamily* owner(std::vector<PromFamily>& families, const std::string& sample,
                  std::string* suffix) {
  for (auto& f : families) {
    if (f.name == sample) {
      *suffix = "";
      return &f;
    }
    if (f.type == "histogram" || f.type == "summary") {
      for (const char* s : {"_bucket", "_sum", "_count"}) {
        if (sample == f.name + s) {
          *suffix = s;
          return &f;
        }
      }
    }
  }
  return nullptr;
}

std::string series_key(const PromSample& s) {
  std::string k = s.name + "{";
  for (const auto& [n, v] : s.labels) {
    k += n;
    k += '=';
    k += v;
    k += ',';
  }
  return k + "}";
}

std::optional<std::string> check_histograms(const PromText& text) {
  for (const auto& f : text.families) {
    if (f.type != "histogram") {
      continue;
    }
    // Group by the labels other than `le`.
    std::map<std::string, std::vector<const PromSample*>> buckets;
    std::map<std::string, double> counts;
    for (const auto& s : f.samples) {
      auto base = s.labels;
      base.erase("le");
      std::string key;
      for (const auto& [n, v] : base) {
        key += n;
        key += '=';
        key += v;
        key += ',';
      }
      if (s.name == f.name + "_bucket") {
        if (!s.labels.count("le")) {
          return f.name + ": a bucket without le";
        }
        buckets[key].push_back(&s);
      } else if (s.name == f.name + "_count") {
        counts[key] = s.value;
      }
    }
    for (const auto& [key, list] : buckets) {
      double last_bound = -std::numeric_limits<double>::infinity();
      double last_count = 0.0;
      for (const PromSample* b : list) {
        auto bound = parse_value(b->labels.at("le"));
        if (!bound || *bound <= last_bound) {
          return f.name + ": buckets not in increasing order of le";
        }
        if (b->value < last_count) {
          return f.name + ": bucket counts are not cumulative";
        }
        last_bound = *bound;
        last_count = b->value;
      }
      if (!std::isinf(last_bound)) {
        return f.name + ": the last bucket is not le=\"+Inf\"";
      }
      auto c = counts.find(key);
      if (c == counts.end() || c->second != last_count) {
        return f.name + ": +Inf bucket differs from _count";
      }
    }
  }
  return std::nullopt;
}

}  // namespace

const PromFamily* PromText::family(const std::string& name) const {
  for (const auto& f : families) {
    if (f.name == name) {
      return &f;
    }
  }
  return nullptr;
}

std::optional<double> PromText::value(const std::string& name,
                                      const std::map<std::string, std::string>& labels) const {
  std::optional<double> found;
  for (const auto& f : families) {
    for (const auto& s : f.samples) {
      if (s.name != name) {
        continue;
      }
      bool match = true;
      for (const auto& [k, v] : labels) {
        auto it = s.labels.find(k);
        match = match && it != s.labels.end() && it->second == v;
      }
      if (match) {
        if (found) {
          return std::nullopt;
        }
        found = s.value;
      }
    }
  }
  return found;
}

std::optional<PromText> parse_prom_text(const std::string& text, std::string* error) {
  PromText out;
  std::set<std::string> series;
  std::set<std::string> helped;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  auto fail = [&](const std::string& why) -> std::optional<PromText> {
    *error = "line " + std::to_string(number) + ": " + why + ": " + line;
    return std::nullopt;
  };
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) {
      continue;
    }
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      const bool is_type = line[2] == 'T';
      std::string rest = line.substr(7);
      auto space = rest.find(' ');
      std::string name = rest.substr(0, space);
      std::string arg = space == std::string::npos ? "" : rest.substr(space + 1);
      if (!valid_name(name, true)) {
        return fail("bad metric name");
      }
      PromFamily* f = nullptr;
      for (auto& existing : out.families) {
        if (existing.name == name) {
          f = &existing;
        }
      }
      if (is_type) {
        static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary",
                                                     "untyped"};
        if (!kTypes.count(arg)) {
          return fail("unknown type");
        }
        if (f != nullptr && !f->type.empty()) {
          return fail("TYPE repeated");
        }
        if (f != nullptr && !f->samples.empty()) {
          return fail("TYPE after samples");
        }
        if (f == nullptr) {
          out.families.push_back({name, arg, "", {}});
        } else {
          f->type = arg;
        }
      } else {
        if (!helped.insert(name).second) {
          return fail("HELP repeated");
        }
        if (f == nullptr) {
          out.families.push_back({name, "", arg, {}});
        } else {
          f->help = arg;
        }
      }
      continue;
    }
    if (line[0] == '#') {
      continue;  // a comment
    }
    Reader r{line, 0, {}};
    PromSample s;
    s.name = r.name(true);
    if (s.name.empty()) {
      return fail("bad sample name");
    }
    if (!r.at_end() && line[r.pos] == '{' && !r.labels(s.labels)) {
      return fail(r.error);
    }
    if (r.at_end() || line[r.pos] != ' ') {
      return fail("no space before the value");
    }
    std::string rest = line.substr(r.pos + 1);
    auto space = rest.find(' ');  // an optional timestamp follows
    auto value = parse_value(rest.substr(0, space));
    if (!value) {
      return fail("bad value");
    }
    s.value = *value;
    std::string suffix;
    PromFamily* f = owner(out.families, s.name, &suffix);
    if (f == nullptr || f->type.empty()) {
      return fail("sample of a family with no TYPE");
    }
    if (suffix == "_bucket" && !s.labels.count("le")) {
      return fail("bucket without le");
    }
    if (!series.insert(series_key(s)).second) {
      return fail("series repeated");
    }
    f->samples.push_back(std::move(s));
  }
  if (auto problem = check_histograms(out)) {
    *error = *problem;
    return std::nullopt;
  }
  return out;
}

}  // namespace lemon::testing
