// When a default model comes back (issue #29 §3), as a pure function with
// injected time: at once at start; after a displacement, only once it has
// been gone for the delay and every server of its type idle for as long.
#include <gtest/gtest.h>

#include "lemon/router/default_model_policy.h"

namespace lemon {
namespace {

using namespace std::chrono_literals;
const DefaultClock::time_point kNow = DefaultClock::time_point() + 1000h;

TEST(DefaultModelPolicy, ADefaultNeverLoadedLoadsAtOnce) {
  const std::vector<ServerActivity> busy = {{ModelType::kLlm, 3, kNow}};
  EXPECT_EQ(defaults_to_load({{"small", std::nullopt, kNow, false}}, busy, kNow, 30s),
            std::vector<std::string>{"small"});
  EXPECT_TRUE(defaults_to_load({{"small", std::nullopt, kNow, true}}, busy, kNow, 30s).empty())
      << "not twice while its load runs";
}

TEST(DefaultModelPolicy, ADisplacedDefaultWaitsForItsTypeToBeIdleForTheDelay) {
  AbsentDefault small{"small", ModelType::kLlm, kNow - 40s, false};
  std::vector<ServerActivity> servers = {{ModelType::kLlm, 0, kNow - 31s},
                                         {ModelType::kEmbedding, 5, kNow}};
  EXPECT_EQ(defaults_to_load({small}, servers, kNow, 30s), std::vector<std::string>{"small"})
      << "a busy server of another type does not hold it back";
  servers[0].idle_since = kNow - 10s;
  EXPECT_TRUE(defaults_to_load({small}, servers, kNow, 30s).empty()) << "idle, but not for long";
  servers[0] = {ModelType::kLlm, 1, kNow - 1h};
  EXPECT_TRUE(defaults_to_load({small}, servers, kNow, 30s).empty()) << "busy";
  servers[0] = {ModelType::kLlm, 0, kNow - 1h};
  small.gone_since = kNow - 5s;
  EXPECT_TRUE(defaults_to_load({small}, servers, kNow, 30s).empty()) << "displaced too recently";
  small.gone_since = kNow - 30s;
  EXPECT_EQ(defaults_to_load({small}, servers, kNow, 30s), std::vector<std::string>{"small"});
  EXPECT_EQ(defaults_to_load({small}, {}, kNow, 30s), std::vector<std::string>{"small"})
      << "nothing loaded at all";
}

}  // namespace
}  // namespace lemon
