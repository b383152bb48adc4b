// Profiles (profile_plan.h): the section's checks name their JSON path; a
// switch unloads what the profile lacks, unpins what it does not pin, and
// loads its models with their pins and options.
#include <gtest/gtest.h>

#include "lemon/router/profile_plan.h"

namespace lemon {
namespace {

using nlohmann::json;

TEST(ProfilePlan, UnloadsWhatTheProfileLacksAndLoadsItsModelsWithPinsAndOptions) {
  Profile work;
  work.models = {"coder", "embed"};
  work.pinned = {"coder"};
  work.options["coder"] = {{"ctx_size", 16384}};
  const ProfilePlan plan = plan_profile(
      work, {{"chat", true}, {"embed", true}, {"embed", true}, {"coder", false}, {"old", false}});
  EXPECT_EQ(plan.unload, (std::vector<std::string>{"chat", "old"}));
  EXPECT_EQ(plan.unpin, std::vector<std::string>{"embed"}) << "pinned, kept, but not a pin here";
  ASSERT_EQ(plan.load.size(), 2u);
  EXPECT_EQ(plan.load[0].model, "coder");
  EXPECT_TRUE(plan.load[0].pinned);
  EXPECT_EQ(plan.load[0].options, (json{{"ctx_size", 16384}}));
  EXPECT_EQ(plan.load[1].model, "embed");
  EXPECT_FALSE(plan.load[1].pinned);
  EXPECT_EQ(plan.load[1].options, json::object());

  const ProfilePlan empty = plan_profile(Profile{}, {{"chat", false}});
  EXPECT_EQ(empty.unload, std::vector<std::string>{"chat"}) << "an empty profile unloads all";
  EXPECT_TRUE(empty.load.empty());
}

TEST(ProfilePlan, TheSectionIsCheckedNamingEachMistakesPath) {
  auto ok = parse_profiles(
      {{"work",
        {{"models", {"a", "b"}}, {"pinned", {"a"}}, {"options", {{"b", {{"ctx_size", 8}}}}}}},
       {"night", {{"models", json::array()}}}});
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(ok->size(), 2u);
  EXPECT_EQ(ok->at("work").pinned, std::vector<std::string>{"a"});
  EXPECT_TRUE(parse_profiles(nullptr).ok());

  struct Case {
    json section;
    const char* path;
  };
  const std::vector<Case> cases = {
      {json::array(), "profiles"},
      {{{"w", 3}}, "profiles.w"},
      {{{"w", {{"model", {"a"}}}}}, "profiles.w.model"},
      {{{"w", {{"models", "a"}}}}, "profiles.w.models"},
      {{{"w", {{"models", {"a", 3}}}}}, "profiles.w.models[1]"},
      {{{"w", {{"models", {"a", "a"}}}}}, "profiles.w.models[1]"},
      {{{"w", {{"models", {"a"}}, {"pinned", {"b"}}}}}, "profiles.w.pinned[0]"},
      {{{"w", {{"models", {"a"}}, {"options", {{"b", json::object()}}}}}}, "profiles.w.options.b"},
      {{{"w", {{"models", {"a"}}, {"options", {{"a", 5}}}}}}, "profiles.w.options.a"},
      {{{"w", {{"models", {"a"}}, {"options", {{"a", {{"ctx-size", 5}}}}}}}},
       "profiles.w.options.a.ctx-size"},
      {{{"w", {{"models", {"a"}}, {"options", {{"a", {{"ctx_size", "big"}}}}}}}},
       "profiles.w.options.a"},
  };
  for (const auto& c : cases) {
    auto r = parse_profiles(c.section);
    ASSERT_FALSE(r.ok()) << c.section.dump();
    EXPECT_EQ(r.error().message().rfind(std::string(c.path) + ": ", 0), 0u)
        << c.section.dump() << " -> " << r.error().message();
  }
}

}  // namespace
}  // namespace lemon
