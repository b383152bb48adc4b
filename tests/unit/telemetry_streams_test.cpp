// Broadcast (the event and log streams' core), the SSE frame of an event, the
// log ring and its spdlog sink, llama-server's /slots parsing, and system
// figures read from a fake /proc and /sys (issue #12 §1-2).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "lemon/core/log.h"
#include "lemon/telemetry/broadcast.h"
#include "lemon/telemetry/context_monitor.h"
#include "lemon/telemetry/event_bus.h"
#include "lemon/telemetry/log_ring.h"
#include "lemon/telemetry/system_stats.h"
#include "support/temp_dir.h"

namespace lemon::telemetry {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

TEST(Broadcast, FollowersGetNewItemsInOrderWithIds) {
  Broadcast<int> b(10, 100);
  auto f = b.follow(std::nullopt, 0);
  EXPECT_EQ(b.publish(7), 1u);
  EXPECT_EQ(b.publish(8), 2u);
  auto items = f->next(1s);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].id, 1u);
  EXPECT_EQ(*items[0].value, 7);
  EXPECT_EQ(*items[1].value, 8);
  EXPECT_TRUE(f->next(10ms).empty()) << "nothing new: the wait times out empty";
}

TEST(Broadcast, ResumesAfterAnIdOrWithABacklogFromTheKeptHistory) {
  Broadcast<int> b(3, 100);
  for (int i = 1; i <= 5; ++i) {
    b.publish(i * 10);
  }
  auto after = b.follow(2, 0)->next(0ms);  // ids 1-2 are gone anyway: 3, 4, 5 are kept
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after.front().id, 3u);
  auto resumed = b.follow(4, 0)->next(0ms);
  ASSERT_EQ(resumed.size(), 1u);
  EXPECT_EQ(*resumed[0].value, 50);
  auto backlog = b.follow(std::nullopt, 2)->next(0ms);
  ASSERT_EQ(backlog.size(), 2u);
  EXPECT_EQ(backlog[0].id, 4u);
  EXPECT_EQ(b.since(3).size(), 2u);
}

TEST(Broadcast, ASlowFollowerIsDroppedAndNeverSlowsThePublisher) {
  Broadcast<int> b(10, 4);
  auto slow = b.follow(std::nullopt, 0);
  auto fast = b.follow(std::nullopt, 0);
  for (int i = 0; i < 4; ++i) {
    b.publish(i);
  }
  EXPECT_EQ(fast->next(0ms).size(), 4u);
  b.publish(4);  // the slow one's queue is full: dropped, not waited for
  EXPECT_TRUE(slow->dropped());
  EXPECT_TRUE(slow->next(0ms).empty()) << "a dropped follower's queue is cleared";
  EXPECT_FALSE(fast->dropped());
  EXPECT_EQ(fast->next(0ms).size(), 1u);
  EXPECT_EQ(b.followers(), 1);
}

TEST(Broadcast, MaybeFollowedIsFalseOnlyWithNoFollowerAttached) {
  Broadcast<int> b(10, 10);
  EXPECT_FALSE(b.maybe_followed());
  auto f = b.follow(std::nullopt, 0);
  EXPECT_TRUE(b.maybe_followed());
  f.reset();
  EXPECT_EQ(b.followers(), 0);
  b.publish(1);  // prunes the follower that is gone
  EXPECT_FALSE(b.maybe_followed());
  auto g = b.follow(std::nullopt, 0);
  EXPECT_TRUE(b.maybe_followed());
  b.close();
  EXPECT_FALSE(b.maybe_followed());
}

TEST(Broadcast, CloseEndsEveryFollowerNowAndLater) {
  Broadcast<int> b(10, 10);
  auto f = b.follow(std::nullopt, 0);
  std::thread waiter([&] { f->next(10s); });  // returns at close, not after 10 s
  b.close();
  waiter.join();
  EXPECT_TRUE(f->closed());
  EXPECT_TRUE(b.follow(std::nullopt, 0)->closed());
  EXPECT_EQ(b.followers(), 0);
}

TEST(EventBus, AFrameIsOneIdAndOneDataLineOfJson) {
  Event e{1795611616352, "load_failed", {{"model", "user.a"}, {"message", "line1\nline2"}}};
  std::string frame = event_sse_frame(42, e);
  EXPECT_EQ(frame.rfind("id: 42\ndata: ", 0), 0u) << frame;
  EXPECT_EQ(frame.substr(frame.size() - 2), "\n\n");
  EXPECT_EQ(std::count(frame.begin(), frame.end(), '\n'), 3) << "no raw newline inside the JSON";
  auto j = nlohmann::json::parse(frame.substr(frame.find("data: ") + 6));
  EXPECT_EQ(j["id"], 42);
  EXPECT_EQ(j["type"], "load_failed");
  EXPECT_EQ(j["model"], "user.a");
  EXPECT_EQ(j["message"], "line1\nline2");
  EXPECT_DOUBLE_EQ(j["time"].get<double>(), 1795611616.352);
}

TEST(LogRing, KeepsRouterLinesAtTheirLevelAndEveryBackendLineTagged) {
  LogRing ring;
  auto sink = LogRing::make_sink(ring);
  add_log_sink(sink);
  auto follower = ring.follow(std::nullopt, 0);
  const std::string before = current_log_level();
  set_log_level("info");
  logger("router")->debug("hidden at info");
  logger("router")->info("shown at info");
  logger("output")->info("[user.a:8001] a backend line logged by the launcher");
  ring.add_output("user.a", "a backend line from the tap");
  set_log_level("debug");
  logger("router")->debug("shown at debug");
  set_log_level(before);
  remove_log_sink(sink);
  logger("router")->warn("not kept: the sink is gone");
  std::vector<LogLine> lines;
  for (const auto& item : follower->next(1s)) {
    lines.push_back(*item.value);
  }
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].text, "shown at info");
  EXPECT_EQ(lines[0].source, "router");
  EXPECT_EQ(lines[0].level, "info");
  EXPECT_EQ(lines[1].model, "user.a");
  EXPECT_EQ(lines[1].level, "output");
  EXPECT_NE(lines[1].formatted().find("OUTPUT [backend user.a] a backend line from the tap"),
            std::string::npos)
      << lines[1].formatted();
  EXPECT_EQ(lines[2].text, "shown at debug");
  auto j = lines[1].to_json(9);
  EXPECT_EQ(j["seq"], 9);
  EXPECT_EQ(j["model"], "user.a");
}

TEST(Slots, ParsesBothShapesOfLlamaServersAnswer) {
  auto slots = parse_slots(nlohmann::json::parse(R"([
    {"id":0,"n_ctx":4096,"is_processing":true,"n_prompt_tokens":1000,
     "next_token":[{"has_next_token":true,"n_decoded":24}]},
    {"id":1,"n_ctx":4096,"is_processing":false,"n_prompt_tokens":100,
     "next_token":{"n_decoded":4}},
    {"id":2,"n_ctx":4096,"is_processing":false},
    {"id":3,"n_ctx":100,"n_prompt_tokens":500},
    {"id":4},
    "garbage"
  ])"));
  ASSERT_EQ(slots.size(), 4u);
  EXPECT_EQ(slots[0].used, 1024);
  EXPECT_TRUE(slots[0].processing);
  EXPECT_EQ(slots[1].used, 104) << "the older object form of next_token";
  EXPECT_EQ(slots[2].used, 0) << "a slot that never ran a task";
  EXPECT_EQ(slots[3].used, 100) << "capped at the slot's context";
  ModelContext c{"user.a", slots};
  EXPECT_EQ(c.total(), 4096 * 3 + 100);
  EXPECT_EQ(c.used(), 1228);
  EXPECT_NEAR(c.fraction(), 1228.0 / (4096 * 3 + 100), 1e-12);
  EXPECT_TRUE(parse_slots(nlohmann::json::object()).empty());
}

TEST(SystemStats, ReadsCpuMemoryAndAmdGpusFromTheFilesystem) {
  testing::TempDir dir("lemon-sysstats");
  const fs::path proc = dir.path() / "proc";
  const fs::path sys = dir.path() / "sys";
  fs::create_directories(proc);
  fs::create_directories(sys / "class/drm/card0/device");
  fs::create_directories(sys / "class/drm/card1/device");
  fs::create_directories(sys / "class/drm/card0-DP-1");
  std::ofstream(proc / "meminfo") << "MemTotal:       16777216 kB\nMemFree:  1 kB\n"
                                     "MemAvailable:    8388608 kB\nHugePages_Total:       0\n";
  std::ofstream(sys / "class/drm/card0/device/gpu_busy_percent") << "30\n";
  std::ofstream(sys / "class/drm/card0/device/mem_info_vram_used") << (2LL << 30) << "\n";
  std::ofstream(sys / "class/drm/card1/device/gpu_busy_percent") << "70\n";
  std::ofstream(sys / "class/drm/card1/device/mem_info_vram_used") << (1LL << 30) << "\n";
  // user nice system idle iowait: 600 busy of 1000, then 300 more busy of 400 more.
  std::ofstream(proc / "stat") << "cpu  400 0 200 300 100 0 0 0\ncpu0 1 2 3 4\n";
  SystemStatsReader reader(nullptr, sys.string(), proc.string());
  auto first = reader.read();  // samples twice 100 ms apart: the same file, no busy time
  EXPECT_EQ(first.memory_gb, 8.0);
  EXPECT_EQ(first.gpu_percent, 70.0) << "the busiest GPU";
  EXPECT_EQ(first.vram_gb, 3.0) << "VRAM used over all GPUs";
  EXPECT_FALSE(first.npu_percent.has_value());
  std::ofstream(proc / "stat") << "cpu  600 0 300 400 100 0 0 0\n";
  auto second = reader.read();
  ASSERT_TRUE(second.cpu_percent.has_value());
  EXPECT_EQ(*second.cpu_percent, 75.0);
  auto j = second.to_json();
  EXPECT_TRUE(j["npu_percent"].is_null());
  EXPECT_EQ(j["memory_gb"], 8.0);
}

TEST(SystemStats, NoGpuIsNull) {
  testing::TempDir dir("lemon-sysstats");
  fs::create_directories(dir.path() / "proc");
  std::ofstream(dir.path() / "proc/meminfo") << "MemTotal: 1048576 kB\nMemAvailable: 0 kB\n";
  SystemStatsReader reader(nullptr, (dir.path() / "sys").string(), (dir.path() / "proc").string());
  auto s = reader.read();
  EXPECT_FALSE(s.gpu_percent.has_value());
  EXPECT_FALSE(s.vram_gb.has_value());
  EXPECT_FALSE(s.cpu_percent.has_value()) << "no /proc/stat";
  EXPECT_EQ(s.memory_gb, 1.0);
}

}  // namespace
}  // namespace lemon::telemetry
