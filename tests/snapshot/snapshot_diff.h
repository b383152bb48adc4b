// Differences between two route snapshots, for people: requests added or
// removed, and for a request in both, the lines of its entry that changed
// (with a little context).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace lemon::snapshot {

// A snapshot keeps its keys in the order they were written (an entry's
// request first); the shapes inside are sorted.
using Snapshot = nlohmann::ordered_json;

// The snapshot's text as written to tests/snapshots/routes.json.
std::string snapshot_text(const Snapshot& snapshot);

// "" when `expected` and `actual` are the same, else what differs.
std::string describe_differences(const Snapshot& expected, const Snapshot& actual);

}  // namespace lemon::snapshot
