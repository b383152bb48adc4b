// RouterEvents: a follower of GET /api/v1/events for integration tests; waits
// for the next event of a type and model, keeping everything it has seen.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/sse_reader.h"
#include "support/test_env.h"

namespace lemon::testing {

class RouterEvents {
 public:
  explicit RouterEvents(int port) : stream_(port, "GET", "/api/v1/events", "", {}) {
    EXPECT_TRUE(stream_.read_head());
  }
  // The next event of `type` for `model` within kWait (heartbeats keep the
  // stream moving, so each read ends well within it).
  std::optional<nlohmann::json> next(const std::string& type, const std::string& model) {
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (std::chrono::steady_clock::now() < deadline) {
      auto e = stream_.next(std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now()));
      if (!e) {
        break;
      }
      if (e->data.empty()) {
        continue;
      }
      auto j = nlohmann::json::parse(e->data);
      seen_.push_back(j);
      if (j["type"] == type && j.value("model", "") == model) {
        return j;
      }
    }
    return std::nullopt;
  }
  // How many events of `type` for `model` were seen so far.
  int count(const std::string& type, const std::string& model) const {
    int n = 0;
    for (const auto& j : seen_) {
      n += j["type"] == type && j.value("model", "") == model ? 1 : 0;
    }
    return n;
  }

 private:
  SseStream stream_;
  std::vector<nlohmann::json> seen_;
};

}  // namespace lemon::testing
