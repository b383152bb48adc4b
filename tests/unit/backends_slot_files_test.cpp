// Saved llama.cpp slots' pure rules (issue #29 §1): file names, which slots
// a planned stop saves, the disk budget's order.
#include <gtest/gtest.h>

#include "lemon/backends/slot_files.h"

namespace lemon {
namespace {

TEST(SlotFiles, NamesRoundTripAndAnythingElseIsNotASlotFile) {
  EXPECT_EQ(slot_file_name({0, 3}), "slot-3.bin");
  EXPECT_EQ(slot_file_name({2, 3}), "replica-2-slot-3.bin") << "replicas never share a file";
  EXPECT_EQ(slot_of_file("slot-3.bin"), (SlotFileKey{0, 3}));
  EXPECT_EQ(slot_of_file("slot-12.bin"), (SlotFileKey{0, 12}));
  EXPECT_EQ(slot_of_file("replica-2-slot-3.bin"), (SlotFileKey{2, 3}));
  for (const char* other :
       {"slot-.bin", "slot-03.bin", "slot--1.bin", "slot-1.bin.tmp", "slot-1x.bin", "x-slot-1.bin",
        "slot-99999999999.bin", "replica-0-slot-1.bin", "replica-01-slot-1.bin",
        "replica--slot-1.bin", "replica-1slot-1.bin", "replica-1-"}) {
    EXPECT_FALSE(slot_of_file(other).has_value()) << other;
  }
}

TEST(SlotFiles, AModelFolderIsSafeForAPathAndNamesNeverCollide) {
  const std::string a = slot_model_folder("user.a/b");
  EXPECT_EQ(a.find('/'), std::string::npos);
  EXPECT_NE(a, slot_model_folder("user.a_b")) << "the hash tells them apart";
  EXPECT_EQ(slot_model_folder("..").front(), '_');
  EXPECT_EQ(slot_identity_hash("x").size(), 16u);
  EXPECT_NE(slot_identity_hash("x"), slot_identity_hash("y"));
}

TEST(SlotFiles, APlannedStopSavesSessionSlotsAndLargeOnesButNeverBusyOrEmptyOnes) {
  const nlohmann::json slots = nlohmann::json::parse(R"([
    {"id": 0, "is_processing": false, "n_prompt_tokens": 2000},
    {"id": 1, "is_processing": false, "n_prompt_tokens": 10},
    {"id": 2, "is_processing": false},
    {"id": 3, "is_processing": true, "n_prompt_tokens": 5000},
    {"id": 4, "is_processing": false, "n_prompt_tokens": 1024},
    {"bad": true}
  ])");
  const auto uses = parse_slot_uses(slots);
  ASSERT_EQ(uses.size(), 5u);
  EXPECT_EQ(slots_to_save(uses, {}, 1024), (std::vector<int>{0, 4}));
  EXPECT_EQ(slots_to_save(uses, {1, 2, 3}, 1024), (std::vector<int>{0, 1, 4}))
      << "a session's slot is saved whatever its size, if it holds anything and is idle";
  EXPECT_TRUE(slots_to_save(parse_slot_uses(nlohmann::json::object()), {}, 0).empty());
}

TEST(SlotFiles, TheBudgetDeletesTheLeastRecentlyUsedFirst) {
  const std::vector<CachedSlotFile> files = {{"new", 400, 30}, {"old", 300, 10}, {"mid", 200, 20}};
  EXPECT_TRUE(files_over_budget(files, 900).empty());
  EXPECT_EQ(files_over_budget(files, 899), std::vector<std::string>{"old"});
  EXPECT_EQ(files_over_budget(files, 400), (std::vector<std::string>{"old", "mid"}));
  EXPECT_EQ(files_over_budget(files, 0), (std::vector<std::string>{"old", "mid", "new"}));
}

TEST(SlotFiles, TheDefaultBudgetIsATenthOfTheFreeSpaceAtMost32GiB) {
  EXPECT_EQ(default_slot_cache_budget(100ULL << 30), 10ULL << 30);
  EXPECT_EQ(default_slot_cache_budget(1000ULL << 30), 32ULL << 30);
  EXPECT_EQ(default_slot_cache_budget(0), 0u);
}

}  // namespace
}  // namespace lemon
