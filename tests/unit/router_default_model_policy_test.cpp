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
  const std::vector<ServerActivity> busy = {{"big", ModelType::kLlm, 3, kNow}};
  EXPECT_EQ(defaults_to_load({{"small", std::nullopt, kNow, "", false}}, busy, kNow, 30s, false),
            std::vector<std::string>{"small"});
  EXPECT_TRUE(
      defaults_to_load({{"small", std::nullopt, kNow, "", true}}, busy, kNow, 30s, false).empty())
      << "not twice while its load runs";
  EXPECT_TRUE(
      defaults_to_load({{"small", std::nullopt, kNow, "", false}}, busy, kNow, 30s, true).empty())
      << "not while another load is under way";
}

TEST(DefaultModelPolicy, ADisplacedDefaultWaitsForItsTypeToBeIdleForTheDelay) {
  AbsentDefault small{"small", ModelType::kLlm, kNow - 40s, "big", false};
  std::vector<ServerActivity> servers = {{"big", ModelType::kLlm, 0, kNow - 31s},
                                         {"emb", ModelType::kEmbedding, 5, kNow}};
  EXPECT_EQ(defaults_to_load({small}, servers, kNow, 30s, false), std::vector<std::string>{"small"})
      << "a busy server of another type does not hold it back";
  servers[0].idle_since = kNow - 10s;
  EXPECT_TRUE(defaults_to_load({small}, servers, kNow, 30s, false).empty())
      << "idle, but not for long";
  servers[0] = {"big", ModelType::kLlm, 1, kNow - 1h};
  EXPECT_TRUE(defaults_to_load({small}, servers, kNow, 30s, false).empty()) << "busy";
  servers[0] = {"big", ModelType::kLlm, 0, kNow - 1h};
  small.gone_since = kNow - 5s;
  EXPECT_TRUE(defaults_to_load({small}, servers, kNow, 30s, false).empty())
      << "displaced too recently";
  small.gone_since = kNow - 30s;
  EXPECT_EQ(defaults_to_load({small}, servers, kNow, 30s, false),
            std::vector<std::string>{"small"});
  EXPECT_EQ(defaults_to_load({small}, {}, kNow, 30s, false), std::vector<std::string>{"small"})
      << "nothing loaded at all";
}

TEST(DefaultModelPolicy, ItWaitsForTheModelThatDisplacedItWhateverItsType) {
  // An image model took the NPU (or the memory) from an LLM default: the
  // default waits for the image model too, so they do not take turns.
  AbsentDefault small{"small", ModelType::kLlm, kNow - 1h, "sd", false};
  std::vector<ServerActivity> servers = {{"sd", ModelType::kImage, 1, kNow - 1h}};
  EXPECT_TRUE(defaults_to_load({small}, servers, kNow, 30s, false).empty());
  servers[0] = {"sd", ModelType::kImage, 0, kNow - 5s};
  EXPECT_TRUE(defaults_to_load({small}, servers, kNow, 30s, false).empty());
  servers[0].idle_since = kNow - 30s;
  EXPECT_EQ(defaults_to_load({small}, servers, kNow, 30s, false),
            std::vector<std::string>{"small"});
  servers.push_back({"other-image", ModelType::kImage, 4, kNow});
  EXPECT_EQ(defaults_to_load({small}, servers, kNow, 30s, false), std::vector<std::string>{"small"})
      << "other models of other types are not its concern";
}

}  // namespace
}  // namespace lemon
