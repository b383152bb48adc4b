#include "snapshot/snapshot_diff.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <vector>

namespace lemon::snapshot {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

std::string pretty(const Snapshot& value) {
  return value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A unified-style diff of two short texts: changed lines marked - and +,
// two lines of context around them.
std::string line_diff(const std::string& before, const std::string& after) {
  const auto a = lines_of(before);
  const auto b = lines_of(after);
  // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
  std::vector<std::vector<int>> lcs(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (std::size_t i = a.size(); i-- > 0;) {
    for (std::size_t j = b.size(); j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::vector<std::pair<char, std::string>> ops;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      ops.emplace_back(' ', a[i++]);
      ++j;
    } else if (i < a.size() && (j == b.size() || lcs[i + 1][j] >= lcs[i][j + 1])) {
      ops.emplace_back('-', a[i++]);
    } else {
      ops.emplace_back('+', b[j++]);
    }
  }
  constexpr std::size_t kContext = 2;
  std::vector<bool> shown(ops.size(), false);
  for (std::size_t k = 0; k < ops.size(); ++k) {
    if (ops[k].first != ' ') {
      const std::size_t from = k >= kContext ? k - kContext : 0;
      const std::size_t to = std::min(ops.size(), k + kContext + 1);
      std::fill(shown.begin() + static_cast<long>(from), shown.begin() + static_cast<long>(to),
                true);
    }
  }
  std::string out;
  bool gap = false;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    if (!shown[k]) {
      gap = true;
      continue;
    }
    if (gap && !out.empty()) {
      out += "    ...\n";
    }
    gap = false;
    out += "  ";
    out += ops[k].first;
    out += ' ';
    out += ops[k].second;
    out += '\n';
  }
  return out;
}

// The text of `value` with its keys sorted: what a diff compares, so that
// only changes show, not the order of keys.
std::string sorted(const Snapshot& value) {
  return nlohmann::json(value).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Equal whatever the order of their keys (a file rewritten by another tool
// may sort them).
bool same(const Snapshot& a, const Snapshot& b) {
  return nlohmann::json(a) == nlohmann::json(b);
}

// An entry's name: where it went and what it sent. Repeated requests get
// their occurrence number.
std::string entry_key(const Snapshot& entry) {
  std::string key = entry.value("listener", "") + entry.value("request", "");
  if (const auto body = entry.value("body", ""); !body.empty()) {
    key += " " + body;
  }
  return key;
}

void compare_entries(const std::string& section, const Snapshot& expected, const Snapshot& actual,
                     std::string& out) {
  auto keyed = [](const Snapshot& list) {
    std::vector<std::pair<std::string, const Snapshot*>> keys;
    std::map<std::string, int> seen;
    for (const auto& entry : list) {
      std::string key = entry_key(entry);
      const int n = ++seen[key];
      keys.emplace_back(n == 1 ? key : key + " (#" + std::to_string(n) + ")", &entry);
    }
    return keys;
  };
  const auto before = keyed(expected);
  const auto after = keyed(actual);
  std::map<std::string, const Snapshot*> after_by_key(after.begin(), after.end());
  std::map<std::string, const Snapshot*> before_by_key(before.begin(), before.end());
  for (const auto& [key, entry] : before) {
    auto found = after_by_key.find(key);
    if (found == after_by_key.end()) {
      out += "[" + section + "] request no longer sent: ";
      out += key + "\n";
    } else if (!same(*found->second, *entry)) {
      out += "[" + section + "] ";
      out += key + "\n";
      out += line_diff(sorted(*entry), sorted(*found->second));
    }
  }
  for (const auto& [key, entry] : after) {
    if (before_by_key.count(key) == 0) {
      out += "[" + section + "] new request: ";
      out += key + "\n";
      out += pretty(*entry) + "\n";
    }
  }
}

}  // namespace

std::string snapshot_text(const Snapshot& snapshot) {
  return pretty(snapshot) + "\n";
}

std::string describe_differences(const Snapshot& expected, const Snapshot& actual) {
  std::string out;
  std::vector<std::string> sections;
  for (const auto* doc : {&expected, &actual}) {
    for (const auto& [name, value] : doc->items()) {
      if (std::find(sections.begin(), sections.end(), name) == sections.end()) {
        sections.push_back(name);
      }
    }
  }
  for (const auto& name : sections) {
    const Snapshot before = expected.value(name, Snapshot());
    const Snapshot after = actual.value(name, Snapshot());
    if (same(before, after)) {
      continue;
    }
    const bool entries = before.is_array() && after.is_array() &&
                         (before.empty() || before.front().is_object()) &&
                         (after.empty() || after.front().is_object());
    if (entries) {
      compare_entries(name, before, after, out);
    } else {
      out += "[" + name + "]\n" + line_diff(sorted(before), sorted(after));
    }
  }
  return out;
}

}  // namespace lemon::snapshot
