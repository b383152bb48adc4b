// SystemDeviceMemory (issue #13 §1): RAM from /proc/meminfo and AMD GPUs from
// sysfs, read from a fake root; nvidia-smi's memory per process, parsed.
#include "lemon/telemetry/device_memory_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace lemon::telemetry {
namespace {

namespace fs = std::filesystem;
constexpr std::int64_t kOneMiB = std::int64_t{1024} * 1024;

void write(const fs::path& path, std::int64_t value) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << value << "\n";
}

TEST(SystemDeviceMemory, ReadsRamAndAmdGpusInCardNumberOrder) {
  testing::TempDir dir("lemon-devmem");
  const fs::path proc = dir.path() / "proc";
  const fs::path drm = dir.path() / "sys/class/drm";
  fs::create_directories(proc);
  std::ofstream(proc / "meminfo") << "MemTotal:       16777216 kB\nMemFree:  1 kB\n"
                                     "MemAvailable:    8388608 kB\n";
  // card2 and card10: numeric order, not "card10" < "card2". card1 has no
  // VRAM files (a display-only device) and is not a GPU here; connectors are
  // skipped.
  write(drm / "card2/device/mem_info_vram_total", 8192 * kOneMiB);
  write(drm / "card2/device/mem_info_vram_used", 1024 * kOneMiB);
  write(drm / "card10/device/mem_info_vram_total", 4096 * kOneMiB);
  write(drm / "card10/device/mem_info_vram_used", 4096 * kOneMiB);
  fs::create_directories(drm / "card1/device");
  fs::create_directories(drm / "card2-DP-1");

  SystemDeviceMemory source(nullptr, proc.string(), (dir.path() / "sys").string());
  auto readings = source.read();
  ASSERT_EQ(readings.size(), 3u);
  EXPECT_EQ(readings[0].device, "ram");
  EXPECT_EQ(readings[0].total, 16777216LL * 1024);
  EXPECT_EQ(readings[0].available, 8388608LL * 1024);
  EXPECT_EQ(readings[1].device, "gpu0");
  EXPECT_EQ(readings[1].total, 8192 * kOneMiB);
  EXPECT_EQ(readings[1].available, 7168 * kOneMiB);
  EXPECT_EQ(readings[2].device, "gpu1");
  EXPECT_EQ(readings[2].total, 4096 * kOneMiB);
  EXPECT_EQ(readings[2].available, 0);
}

TEST(SystemDeviceMemory, NoMeminfoAndNoGpusReadNothing) {
  testing::TempDir dir("lemon-devmem");
  SystemDeviceMemory source(nullptr, (dir.path() / "proc").string(), (dir.path() / "sys").string());
  EXPECT_TRUE(source.read().empty());
}

TEST(SystemDeviceMemory, ProcessMemoryNamesEachGpuByItsIndex) {
  const std::vector<std::string> gpus = {"0, GPU-aaaa", "1, GPU-bbbb", "garbage"};
  const std::vector<std::string> apps = {
      "4242, GPU-bbbb, 512",   // on gpu1
      "4242, GPU-aaaa, 100",   // the same process on gpu0 too
      "77, GPU-aaaa, 2048",    //
      "88, GPU-cccc, 64",      // a GPU not listed: left out
      "x, GPU-aaaa, 1",        // not a pid
      "99, GPU-aaaa, [N/A]",   // no figure (the real tool's answer without rights)
      "NVIDIA-SMI has failed"  // the driver is gone
  };
  const auto by_pid = parse_process_memory(gpus, apps);
  ASSERT_EQ(by_pid.size(), 2U);
  EXPECT_EQ(by_pid.at(4242), (DeviceBytes{{"gpu0", 100 * kOneMiB}, {"gpu1", 512 * kOneMiB}}));
  EXPECT_EQ(by_pid.at(77), (DeviceBytes{{"gpu0", 2048 * kOneMiB}}));
  EXPECT_TRUE(parse_process_memory({}, apps).empty()) << "no GPU list, no names";
}

TEST(SystemDeviceMemory, WithoutNvidiaSmiNoProcessIsMeasured) {
  SystemDeviceMemory source(nullptr, "/nonexistent-proc", "/nonexistent-sys");
  EXPECT_TRUE(source.process_memory().empty());
}

}  // namespace
}  // namespace lemon::telemetry
