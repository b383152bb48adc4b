// Footprints remembered across loads: which figure admission charges
// (admission_charge, pure) and the file that keeps them (FootprintFile).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "lemon/router/memory_policy.h"
#include "lemon/telemetry/footprint_file.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

constexpr std::int64_t kFootprintTestMiB = std::int64_t{1024} * 1024;

TEST(AdmissionCharge, AConfigurationNeverMeasuredIsChargedItsEstimate) {
  const DeviceBytes estimate = {{"ram", 485 * kFootprintTestMiB}};
  EXPECT_EQ(admission_charge(estimate, std::nullopt), estimate);
}

TEST(AdmissionCharge, ARememberedFigureWithItsMarginReplacesTheEstimate) {
  // The figures: 485 MiB estimated, 415 MiB measured; 5 % of that is
  // under the floor.
  const DeviceBytes small = admission_charge({{"ram", 485 * kFootprintTestMiB}},
                                             DeviceBytes{{"ram", 415 * kFootprintTestMiB}});
  EXPECT_EQ(small.at("ram"), 415 * kFootprintTestMiB + kFootprintMarginFloor);
  EXPECT_LT(small.at("ram"), 485 * kFootprintTestMiB);
  // 8 GiB measured: 5 % of it.
  const std::int64_t big = 8192 * kFootprintTestMiB;
  EXPECT_EQ(
      admission_charge({{"ram", 10240 * kFootprintTestMiB}}, DeviceBytes{{"ram", big}}).at("ram"),
      big + static_cast<std::int64_t>(static_cast<double>(big) * kFootprintMargin));
}

TEST(AdmissionCharge, TheMarginHasAFloor) {
  const DeviceBytes charge = admission_charge({{"ram", 300 * kFootprintTestMiB}},
                                              DeviceBytes{{"ram", 5 * kFootprintTestMiB}});
  EXPECT_EQ(charge.at("ram"), 5 * kFootprintTestMiB + kFootprintMarginFloor);
}

TEST(AdmissionCharge, AMeasurementAboveTheEstimateWins) {
  const DeviceBytes charge = admission_charge({{"ram", 100 * kFootprintTestMiB}},
                                              DeviceBytes{{"ram", 400 * kFootprintTestMiB}});
  EXPECT_GT(charge.at("ram"), 400 * kFootprintTestMiB)
      << "the estimate was too low: the measurement is safer";
}

TEST(AdmissionCharge, OnlyTheDevicesMeasuredChange) {
  // RAM measured (its RSS); the GPU's part never was: its estimate stays.
  const DeviceBytes estimate = {{"gpu0", 4096 * kFootprintTestMiB},
                                {"ram", 64 * kFootprintTestMiB}};
  const DeviceBytes charge =
      admission_charge(estimate, DeviceBytes{{"ram", 200 * kFootprintTestMiB}});
  EXPECT_EQ(charge.at("gpu0"), 4096 * kFootprintTestMiB);
  EXPECT_EQ(charge.at("ram"), 200 * kFootprintTestMiB + kFootprintMarginFloor);
  EXPECT_FALSE(
      admission_charge({{"ram", kFootprintTestMiB}}, DeviceBytes{{"gpu1", kFootprintTestMiB}})
          .contains("gpu1"));
}

FootprintKey footprint_test_key(const std::string& model, int ctx) {
  return {model, "llamacpp", {{"ctx_size", ctx}, {"parallel", 1}}, "ram"};
}

TEST(FootprintFile, KeepsThePeakPerConfigurationAcrossRuns) {
  testing::TempDir dir;
  const auto path = std::filesystem::path(dir.path()) / "footprints.json";
  {
    FootprintFile file(path);
    EXPECT_FALSE(file.recall(footprint_test_key("a", 4096)));
    EXPECT_FALSE(file.last_of("a"));
    file.remember(footprint_test_key("a", 4096), {{"ram", 400 * kFootprintTestMiB}});
    file.remember(footprint_test_key("a", 4096),
                  {{"ram", 300 * kFootprintTestMiB}});  // lower: the peak stays
    file.remember(footprint_test_key("a", 4096), {{"ram", 415 * kFootprintTestMiB}});
    file.remember(footprint_test_key("a", 8192), {{"ram", 450 * kFootprintTestMiB}});
    EXPECT_EQ(file.recall(footprint_test_key("a", 4096))->at("ram"), 415 * kFootprintTestMiB);
    EXPECT_FALSE(file.recall(footprint_test_key("b", 4096)));
  }
  FootprintFile again(path);  // a new run reads what the last one kept
  EXPECT_EQ(again.recall(footprint_test_key("a", 4096))->at("ram"), 415 * kFootprintTestMiB);
  EXPECT_EQ(again.recall(footprint_test_key("a", 8192))->at("ram"), 450 * kFootprintTestMiB);
  EXPECT_EQ(again.last_of("a")->at("ram"), 450 * kFootprintTestMiB)
      << "the configuration measured last";
  FootprintKey on_gpu = footprint_test_key("a", 4096);
  on_gpu.device = "gpu0";
  EXPECT_FALSE(again.recall(on_gpu)) << "another device is another configuration";
}

TEST(FootprintFile, AFileThatIsNotJsonStartsEmptyAndIsReplaced) {
  testing::TempDir dir;
  const auto path = std::filesystem::path(dir.path()) / "footprints.json";
  std::ofstream(path) << "not json";
  FootprintFile file(path);
  EXPECT_FALSE(file.last_of("a"));
  file.remember(footprint_test_key("a", 4096), {{"ram", kFootprintTestMiB}});
  EXPECT_EQ(FootprintFile(path).recall(footprint_test_key("a", 4096))->at("ram"),
            kFootprintTestMiB);
}

}  // namespace
}  // namespace lemon
