// The vocabulary of model slots: ModelType (which LRU slot pool a server
// occupies) and Device (a bitmask of the hardware a server uses).
//
// Seed 000: type comes from labels, device from the recipe and its backend.
// Thread-safety: pure functions and values.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lemon {

enum class ModelType : std::uint8_t { kLlm = 0, kEmbedding, kReranking, kAudio, kImage };

inline constexpr std::size_t kModelTypeCount = 5;
inline constexpr std::array<ModelType, kModelTypeCount> kAllModelTypes = {
    ModelType::kLlm, ModelType::kEmbedding, ModelType::kReranking, ModelType::kAudio,
    ModelType::kImage};

// "llm", "embedding", "reranking", "audio", "image".
const char* model_type_name(ModelType type);
// Lemonade 11's name: "transcription" for kAudio, else model_type_name().
const char* lemonade11_type_name(ModelType type);
// Either generation's name ("audio" or "transcription").
std::optional<ModelType> parse_model_type(std::string_view name);

// embedding/embeddings -> kEmbedding, reranking -> kReranking,
// audio/transcription -> kAudio, image -> kImage, otherwise kLlm. When labels
// name several types, the first in that order wins (not label order), so the
// answer does not depend on how a user happened to list labels.
ModelType model_type_from_labels(const std::vector<std::string>& labels);
// The labels' type, except that a model whose labels name no type and whose
// recipe serves one type only takes that type: `whispercpp` is kAudio and
// `sd-cpp` kImage, as a user model registered without labels expects.
ModelType model_type_of(const std::vector<std::string>& labels, std::string_view recipe);

enum class Device : std::uint8_t { kNone = 0, kCpu = 1, kGpu = 2, kNpu = 4 };

constexpr Device operator|(Device a, Device b) {
  return static_cast<Device>(static_cast<std::uint8_t>(a) | static_cast<std::uint8_t>(b));
}
// Yields true when the masks share a bit, so `if (info.device & Device::kNpu)`
// reads naturally.
constexpr bool operator&(Device a, Device b) {
  return (static_cast<std::uint8_t>(a) & static_cast<std::uint8_t>(b)) != 0;
}

// "cpu", "gpu", "npu" joined with '|', in that order, e.g. "gpu|npu".
std::string device_name(Device device);

// Device for a recipe and the backend chosen for it.
// `backend` is the llamacpp/whispercpp/sd-cpp backend ("cpu", "vulkan",
// "npu", "rocm", ...); ignored for recipes without one.
Device device_for_recipe(std::string_view recipe, std::string_view backend);

}  // namespace lemon
