#include "lemon/core/model_types.h"

#include <algorithm>

#include "lemon/core/enum_names.h"

namespace lemon {

namespace {

constexpr auto kModelTypeNames =
    std::to_array<EnumName<ModelType>>({{ModelType::kLlm, "llm"},
                                        {ModelType::kEmbedding, "embedding"},
                                        {ModelType::kReranking, "reranking"},
                                        {ModelType::kAudio, "audio"},
                                        {ModelType::kImage, "image"}});

}  // namespace

const char* model_type_name(ModelType type) {
  return name_of(kModelTypeNames, type, "llm");
}

const char* lemonade11_type_name(ModelType type) {
  return type == ModelType::kAudio ? "transcription" : model_type_name(type);
}

std::optional<ModelType> parse_model_type(std::string_view name) {
  for (ModelType t : kAllModelTypes) {
    if (name == model_type_name(t) || name == lemonade11_type_name(t)) {
      return t;
    }
  }
  return std::nullopt;
}

ModelType model_type_from_labels(const std::vector<std::string>& labels) {
  auto has = [&](std::string_view label) {
    return std::find(labels.begin(), labels.end(), label) != labels.end();
  };
  if (has("embedding") || has("embeddings")) {
    return ModelType::kEmbedding;
  }
  if (has("reranking")) {
    return ModelType::kReranking;
  }
  if (has("audio") || has("transcription")) {
    return ModelType::kAudio;
  }
  if (has("image")) {
    return ModelType::kImage;
  }
  return ModelType::kLlm;
}

ModelType model_type_of(const std::vector<std::string>& labels, std::string_view recipe) {
  const ModelType by_labels = model_type_from_labels(labels);
  if (by_labels != ModelType::kLlm) {
    return by_labels;
  }
  if (recipe == "whispercpp") {
    return ModelType::kAudio;
  }
  if (recipe == "sd-cpp") {
    return ModelType::kImage;
  }
  return by_labels;
}

std::string device_name(Device device) {
  std::string out;
  auto append = [&](Device bit, const char* name) {
    if (device & bit) {
      if (!out.empty()) {
        out += '|';
      }
      out += name;
    }
  };
  append(Device::kCpu, "cpu");
  append(Device::kGpu, "gpu");
  append(Device::kNpu, "npu");
  return out;
}

Device device_for_recipe(std::string_view recipe, std::string_view backend) {
  if (recipe == "llamacpp") {
    return backend == "cpu" ? Device::kCpu : Device::kGpu;
  }
  if (recipe == "ryzenai-llm" || recipe == "flm" || recipe == "oga-npu") {
    return Device::kNpu;
  }
  if (recipe == "oga-hybrid") {
    return Device::kGpu | Device::kNpu;
  }
  if (recipe == "oga-cpu") {
    return Device::kCpu;
  }
  if (recipe == "whispercpp") {
    if (backend == "npu") {
      return Device::kNpu;
    }
    return backend == "vulkan" ? Device::kGpu : Device::kCpu;
  }
  if (recipe == "sd-cpp") {
    return backend == "rocm" ? Device::kGpu : Device::kCpu;
  }
  return Device::kNone;
}

}  // namespace lemon
