// Memory-aware admission as pure functions (issue #13 §1): budgets per
// device, evictions to fit (idle LRU first, then busy), refusing what cannot
// fit alone, and unloading idle servers when another program takes memory.
#include <gtest/gtest.h>

#include "lemon/router/memory_policy.h"

namespace lemon {
namespace {

constexpr std::int64_t GiB = 1024LL * 1024 * 1024;

ServerMemory server(const std::string& id, DeviceBytes charges, int in_flight, std::uint64_t lru) {
  return {id, std::move(charges), in_flight, lru};
}

TEST(MemoryBudget, ParsesPercentagesFractionsAndSizes) {
  EXPECT_DOUBLE_EQ(BudgetRule::parse("80%")->fraction, 0.8);
  EXPECT_DOUBLE_EQ(BudgetRule::parse("0.5")->fraction, 0.5);
  EXPECT_EQ(BudgetRule::parse("24G")->ram_bytes, 24 * GiB);
  EXPECT_EQ(BudgetRule::parse("512MiB")->ram_bytes, 512LL << 20);
  EXPECT_EQ(BudgetRule::parse("1073741824")->ram_bytes, GiB);
  for (const char* bad : {"", "0", "-1G", "120%", "12X", "abc", "nanG"}) {
    EXPECT_FALSE(BudgetRule::parse(bad).has_value()) << bad;
  }
}

TEST(MemoryBudget, IsAShareOfWhatIsFreePlusWhatOurServersHold) {
  std::vector<DeviceReading> devices = {{"ram", 64 * GiB, 20 * GiB}, {"gpu0", 24 * GiB, 4 * GiB}};
  auto budgets = device_budgets(devices, {{"ram", 10 * GiB}, {"gpu0", 16 * GiB}}, {});
  EXPECT_EQ(budgets["ram"], static_cast<std::int64_t>(30 * GiB * 0.8));
  EXPECT_EQ(budgets["gpu0"], static_cast<std::int64_t>(20 * GiB * 0.8));
  BudgetRule absolute = *BudgetRule::parse("8G");
  auto fixed = device_budgets(devices, {}, absolute);
  EXPECT_EQ(fixed["ram"], 8 * GiB) << "an absolute size is the RAM budget";
  EXPECT_EQ(fixed["gpu0"], static_cast<std::int64_t>(4 * GiB * 0.8)) << "GPUs keep 80 %";
}

TEST(MemoryAdmission, FitsWithoutEvictingWhenThereIsRoom) {
  auto plan = plan_admission({server("a", {{"ram", 4 * GiB}}, 0, 1)}, {{"ram", 10 * GiB}},
                             {{"ram", 5 * GiB}});
  EXPECT_EQ(plan.kind, AdmissionPlan::Kind::kFits);
  EXPECT_TRUE(plan.victims.empty());
}

TEST(MemoryAdmission, EvictsIdleLeastRecentlyUsedOfAnyTypeThenBusy) {
  std::vector<ServerMemory> servers = {
      server("busy-old", {{"ram", 3 * GiB}}, 2, 1), server("idle-new", {{"ram", 3 * GiB}}, 0, 9),
      server("idle-old", {{"ram", 3 * GiB}}, 0, 5), server("gpu-only", {{"gpu0", 8 * GiB}}, 0, 0)};
  auto one = plan_admission(servers, {{"ram", 10 * GiB}}, {{"ram", 4 * GiB}});
  EXPECT_EQ(one.kind, AdmissionPlan::Kind::kEvict);
  EXPECT_EQ(one.victims, (std::vector<std::string>{"idle-old"}))
      << "the least recently used idle server, and a server on another device is no help";
  auto all = plan_admission(servers, {{"ram", 10 * GiB}}, {{"ram", 9 * GiB}});
  EXPECT_EQ(all.victims, (std::vector<std::string>{"idle-old", "idle-new", "busy-old"}))
      << "busy servers only after every idle one (they drain first)";
}

TEST(MemoryAdmission, EachDeviceIsCountedOnItsOwn) {
  std::vector<ServerMemory> servers = {server("a", {{"gpu0", 10 * GiB}, {"ram", 1 * GiB}}, 0, 1),
                                       server("b", {{"gpu1", 10 * GiB}}, 0, 2)};
  DeviceBytes budgets = {{"ram", 32 * GiB}, {"gpu0", 16 * GiB}, {"gpu1", 16 * GiB}};
  auto on_gpu1 = plan_admission(servers, budgets, {{"gpu1", 8 * GiB}, {"ram", GiB}});
  EXPECT_EQ(on_gpu1.victims, (std::vector<std::string>{"b"}));
  auto on_gpu0 = plan_admission(servers, budgets, {{"gpu0", 6 * GiB}});
  EXPECT_EQ(on_gpu0.kind, AdmissionPlan::Kind::kFits);
}

TEST(MemoryAdmission, AModelTooBigEvenAloneIsRefusedAtOnce) {
  auto plan =
      plan_admission({server("a", {{"ram", GiB}}, 0, 1)}, {{"ram", 10 * GiB}, {"gpu0", 8 * GiB}},
                     {{"ram", GiB}, {"gpu0", 12 * GiB}});
  EXPECT_EQ(plan.kind, AdmissionPlan::Kind::kTooBig);
  EXPECT_EQ(plan.device, "gpu0");
  EXPECT_EQ(plan.need, 12 * GiB);
  EXPECT_EQ(plan.budget, 8 * GiB);
  EXPECT_TRUE(plan.victims.empty()) << "nothing is evicted for a load that cannot happen";
}

TEST(MemoryPressure, IdleServersOnTheSqueezedDeviceGoLeastRecentlyUsedFirst) {
  std::vector<ServerMemory> servers = {
      server("old", {{"gpu0", 2 * GiB}}, 0, 1), server("new", {{"gpu0", 2 * GiB}}, 0, 5),
      server("busy", {{"gpu0", 6 * GiB}}, 1, 0), server("ram", {{"ram", 4 * GiB}}, 0, 0)};
  std::vector<DeviceReading> devices = {{"gpu0", 24 * GiB, 1 * GiB}, {"ram", 64 * GiB, 40 * GiB}};
  EXPECT_EQ(plan_pressure_relief(servers, devices, 2 * GiB), (std::vector<std::string>{"old"}));
  EXPECT_EQ(plan_pressure_relief(servers, devices, 4 * GiB),
            (std::vector<std::string>{"old", "new"}));
  EXPECT_EQ(plan_pressure_relief(servers, devices, 20 * GiB),
            (std::vector<std::string>{"old", "new"}))
      << "busy servers are never unloaded for pressure";
  EXPECT_TRUE(plan_pressure_relief(servers, devices, GiB / 2).empty());
}

TEST(MemoryFormat, BytesReadAsPeopleWriteThem) {
  EXPECT_EQ(format_bytes(3 * GiB / 2), "1.5 GiB");
  EXPECT_EQ(format_bytes(512LL << 20), "512 MiB");
  EXPECT_EQ(format_bytes(900), "900 B");
}

TEST(OutOfMemoryRecovery, IdleServersOfTheSameDeviceLeastRecentlyUsedFirst) {
  std::vector<ServerMemory> servers = {
      server("gpu-new", {{"gpu0", 4 * GiB}, {"ram", 1 * GiB}}, 0, 9),
      server("gpu-old", {{"gpu0", 4 * GiB}}, 0, 2), server("gpu-busy", {{"gpu0", 4 * GiB}}, 1, 1),
      server("other-gpu", {{"gpu1", 4 * GiB}}, 0, 0), server("cpu", {{"ram", 2 * GiB}}, 0, 0)};
  EXPECT_EQ(plan_out_of_memory_recovery(servers, "gpu0"),
            (std::vector<std::string>{"gpu-old", "gpu-new"}))
      << "busy servers wait for the final evict-all; other devices are no help";
  EXPECT_EQ(plan_out_of_memory_recovery(servers, "ram"),
            (std::vector<std::string>{"cpu", "gpu-new"}))
      << "a GPU server that also holds RAM frees some";
  EXPECT_TRUE(plan_out_of_memory_recovery(servers, "gpu7").empty());
}

TEST(OutOfMemoryRecovery, TheLoadsDeviceIsWhereMostOfItsEstimateIs) {
  EXPECT_EQ(primary_device({{"ram", 1 * GiB}, {"gpu0", 6 * GiB}}), "gpu0");
  EXPECT_EQ(primary_device({{"ram", 3 * GiB}}), "ram");
  EXPECT_EQ(primary_device({}), "ram");
}

ServerMemory pinned(ServerMemory s) {
  s.pinned = true;
  return s;
}

TEST(MemoryAdmission, PinnedServersAreNeverVictims) {
  std::vector<ServerMemory> servers = {pinned(server("pinned-old", {{"ram", 4 * GiB}}, 0, 1)),
                                       server("idle-new", {{"ram", 4 * GiB}}, 0, 9)};
  auto plan = plan_admission(servers, {{"ram", 10 * GiB}}, {{"ram", 5 * GiB}});
  EXPECT_EQ(plan.kind, AdmissionPlan::Kind::kEvict);
  EXPECT_EQ(plan.victims, (std::vector<std::string>{"idle-new"}))
      << "the newer server goes, because the older one is pinned";
}

TEST(MemoryAdmission, ALoadThatFitsOnlyIfPinnedServersWentEvictsNothing) {
  std::vector<ServerMemory> servers = {pinned(server("p1", {{"ram", 4 * GiB}}, 0, 1)),
                                       server("idle", {{"ram", 2 * GiB}}, 0, 2),
                                       pinned(server("p2", {{"gpu0", 4 * GiB}}, 0, 3))};
  auto plan = plan_admission(servers, {{"ram", 10 * GiB}}, {{"ram", 7 * GiB}});
  EXPECT_EQ(plan.kind, AdmissionPlan::Kind::kPinned);
  EXPECT_EQ(plan.pinned, std::vector<std::string>{"p1"}) << "only the pinned servers on ram";
  EXPECT_EQ(plan.device, "ram");
  EXPECT_EQ(plan.need, 7 * GiB);
  EXPECT_TRUE(plan.victims.empty()) << "nothing is evicted for a load that cannot happen";
  EXPECT_EQ(plan_admission(servers, {{"ram", 10 * GiB}}, {{"ram", 6 * GiB}}).kind,
            AdmissionPlan::Kind::kEvict)
      << "6 GiB fits once the unpinned server goes";
}

TEST(MemoryPressure, PinnedServersAreNotUnloadedUnderPressure) {
  std::vector<ServerMemory> servers = {pinned(server("p", {{"ram", 4 * GiB}}, 0, 1)),
                                       server("q", {{"ram", GiB}}, 0, 5)};
  std::vector<DeviceReading> devices = {{"ram", 16 * GiB, 0}};
  EXPECT_EQ(plan_pressure_relief(servers, devices, 2 * GiB), std::vector<std::string>{"q"});
}

}  // namespace
}  // namespace lemon
