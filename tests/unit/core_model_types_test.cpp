// ModelType from labels, Device bit operations and names, and the device
// table per recipe and backend (issue #2 §3).
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "lemon/core/model_types.h"

namespace lemon {
namespace {

using Labels = std::vector<std::string>;

// ---- model types -------------------------------------------------------------------------

TEST(CoreModelType, FromEveryLabel) {
  EXPECT_EQ(model_type_from_labels({"embedding"}), ModelType::kEmbedding);
  EXPECT_EQ(model_type_from_labels({"embeddings"}), ModelType::kEmbedding);
  EXPECT_EQ(model_type_from_labels({"reranking"}), ModelType::kReranking);
  EXPECT_EQ(model_type_from_labels({"audio"}), ModelType::kAudio);
  EXPECT_EQ(model_type_from_labels({"transcription"}), ModelType::kAudio);
  EXPECT_EQ(model_type_from_labels({"image"}), ModelType::kImage);
}

TEST(CoreModelType, OtherLabelsAreLlm) {
  EXPECT_EQ(model_type_from_labels({}), ModelType::kLlm);
  EXPECT_EQ(model_type_from_labels({"reasoning", "tool-calling", "vision", "hot", "coding"}),
            ModelType::kLlm);
  // Exact labels only.
  EXPECT_EQ(model_type_from_labels({"Embedding"}), ModelType::kLlm);
  EXPECT_EQ(model_type_from_labels({"images"}), ModelType::kLlm);
  EXPECT_EQ(model_type_from_labels({"rerank"}), ModelType::kLlm);
}

TEST(CoreModelType, ARecipeOfOneTypeGivesItWhenNoLabelDoes) {
  EXPECT_EQ(model_type_of({}, "whispercpp"), ModelType::kAudio);
  EXPECT_EQ(model_type_of({"hot"}, "sd-cpp"), ModelType::kImage);
  EXPECT_EQ(model_type_of({}, "llamacpp"), ModelType::kLlm);
  EXPECT_EQ(model_type_of({"embeddings"}, "llamacpp"), ModelType::kEmbedding);
  // A label that names a type wins.
  EXPECT_EQ(model_type_of({"audio"}, "sd-cpp"), ModelType::kAudio);
}

TEST(CoreModelType, PrecedenceDoesNotDependOnLabelOrder) {
  EXPECT_EQ(model_type_from_labels({"image", "embedding"}), ModelType::kEmbedding);
  EXPECT_EQ(model_type_from_labels({"embedding", "image"}), ModelType::kEmbedding);
  EXPECT_EQ(model_type_from_labels({"audio", "reranking"}), ModelType::kReranking);
  EXPECT_EQ(model_type_from_labels({"image", "transcription"}), ModelType::kAudio);
  EXPECT_EQ(model_type_from_labels({"vision", "image"}), ModelType::kImage);
}

TEST(CoreModelType, NamesRoundTrip) {
  ASSERT_EQ(kAllModelTypes.size(), kModelTypeCount);
  const std::vector<std::string> names = {"llm", "embedding", "reranking", "audio", "image"};
  for (std::size_t i = 0; i < kAllModelTypes.size(); ++i) {
    EXPECT_EQ(model_type_name(kAllModelTypes[i]), names[i]);
    EXPECT_EQ(parse_model_type(names[i]), kAllModelTypes[i]);
    // Slot pools are indexed by the enum value.
    EXPECT_EQ(static_cast<std::size_t>(kAllModelTypes[i]), i);
  }
  EXPECT_EQ(parse_model_type("LLM"), std::nullopt);
  EXPECT_EQ(parse_model_type("embeddings"), std::nullopt);
  EXPECT_EQ(parse_model_type(""), std::nullopt);
}

// ---- devices --------------------------------------------------------------------------------

TEST(CoreDevice, AndIsTrueWhenMasksShareABit) {
  const Device hybrid = Device::kGpu | Device::kNpu;
  EXPECT_TRUE(hybrid & Device::kGpu);
  EXPECT_TRUE(hybrid & Device::kNpu);
  EXPECT_FALSE(hybrid & Device::kCpu);
  EXPECT_TRUE(hybrid & (Device::kCpu | Device::kNpu));
  EXPECT_TRUE(Device::kCpu & Device::kCpu);
  EXPECT_FALSE(Device::kCpu & Device::kGpu);
  EXPECT_FALSE(Device::kGpu & Device::kNpu);
  EXPECT_FALSE(Device::kNone & Device::kNone);
  EXPECT_FALSE(Device::kNone & (Device::kCpu | Device::kGpu | Device::kNpu));
  static_assert(Device::kGpu & (Device::kGpu | Device::kCpu), "usable in constant expressions");
}

TEST(CoreDevice, OrCombinesBits) {
  EXPECT_EQ(Device::kCpu | Device::kCpu, Device::kCpu);
  EXPECT_EQ(Device::kNone | Device::kGpu, Device::kGpu);
  EXPECT_EQ(static_cast<int>(Device::kCpu | Device::kGpu | Device::kNpu), 7);
}

TEST(CoreDevice, NamesJoinedInFixedOrder) {
  EXPECT_EQ(device_name(Device::kNone), "");
  EXPECT_EQ(device_name(Device::kCpu), "cpu");
  EXPECT_EQ(device_name(Device::kGpu), "gpu");
  EXPECT_EQ(device_name(Device::kNpu), "npu");
  EXPECT_EQ(device_name(Device::kNpu | Device::kGpu), "gpu|npu");
  EXPECT_EQ(device_name(Device::kNpu | Device::kCpu), "cpu|npu");
  EXPECT_EQ(device_name(Device::kCpu | Device::kGpu | Device::kNpu), "cpu|gpu|npu");
}

struct DeviceCase {
  const char* recipe;
  const char* backend;
  Device device;
};

class CoreDeviceForRecipe : public ::testing::TestWithParam<DeviceCase> {};

TEST_P(CoreDeviceForRecipe, Table) {
  const DeviceCase& c = GetParam();
  EXPECT_EQ(device_for_recipe(c.recipe, c.backend), c.device)
      << c.recipe << "/" << c.backend << " -> "
      << device_name(device_for_recipe(c.recipe, c.backend)) << ", want " << device_name(c.device);
}

INSTANTIATE_TEST_SUITE_P(
    Recipes, CoreDeviceForRecipe,
    ::testing::Values(
        DeviceCase{"llamacpp", "cpu", Device::kCpu}, DeviceCase{"llamacpp", "vulkan", Device::kGpu},
        DeviceCase{"llamacpp", "rocm", Device::kGpu}, DeviceCase{"llamacpp", "metal", Device::kGpu},
        DeviceCase{"ryzenai-llm", "", Device::kNpu}, DeviceCase{"ryzenai-llm", "npu", Device::kNpu},
        DeviceCase{"flm", "", Device::kNpu},
        DeviceCase{"oga-hybrid", "", Device::kGpu | Device::kNpu},
        DeviceCase{"oga-npu", "", Device::kNpu}, DeviceCase{"oga-cpu", "", Device::kCpu},
        DeviceCase{"oga-cpu", "npu", Device::kCpu},  // backend ignored
        DeviceCase{"whispercpp", "cpu", Device::kCpu},
        DeviceCase{"whispercpp", "npu", Device::kNpu},
        DeviceCase{"whispercpp", "vulkan", Device::kGpu}, DeviceCase{"sd-cpp", "cpu", Device::kCpu},
        DeviceCase{"sd-cpp", "rocm", Device::kGpu}, DeviceCase{"kokoro", "", Device::kNone},
        DeviceCase{"", "", Device::kNone}),
    [](const ::testing::TestParamInfo<DeviceCase>& p) {
      std::string name = std::string(p.param.recipe) + "_" + p.param.backend;
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) {
          ch = '_';
        }
      }
      return name + "_" + std::to_string(p.index);
    });

}  // namespace
}  // namespace lemon
