// Memory estimates before a server starts (issue #13 §1): llama.cpp's from
// its GGUF header (tensor bytes, KV cache for ctx_size x parallel, compute
// buffers) on the device it runs on, plus the process overhead in RAM;
// whisper.cpp's from its ggml header; other recipes from their files' sizes.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "lemon/backends/llamacpp_server.h"
#include "lemon/backends/whisper_server.h"
#include "support/gguf_writer.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

using nlohmann::json;
constexpr std::int64_t MiB = std::int64_t{1024} * 1024;
constexpr std::int64_t kOverhead = 64 * MiB;      // the process, in RAM
constexpr std::int64_t kComputeFloor = 32 * MiB;  // small models' compute buffers
constexpr std::int64_t kTensorBytes = 8192 + 144;
constexpr std::int64_t kKvPerToken = 256;

class MemoryEstimate : public ::testing::Test {
 protected:
  void SetUp() override {
    gguf_ = (dir_.path() / "tiny.gguf").string();
    std::ofstream(gguf_, std::ios::binary) << testing::tiny_llama_gguf();
  }

  ModelInfo model(const std::string& recipe, const std::string& path) const {
    ModelInfo info;
    info.name = "Tiny-GGUF";
    info.recipe = recipe;
    info.type = recipe == "whispercpp" ? ModelType::kAudio : ModelType::kLlm;
    info.checkpoints["main"] = "org/Tiny-GGUF:tiny.gguf";
    info.resolved_paths["main"] = path;
    info.downloaded = true;
    return info;
  }

  static RecipeOptions options(const std::string& recipe, const json& j) {
    auto r = RecipeOptions::from_json(recipe, j);
    EXPECT_TRUE(r.ok()) << j.dump();
    return r.ok() ? *r : RecipeOptions{};
  }

  testing::TempDir dir_{"lemon-estimate"};
  std::string gguf_;
  BackendEnvironment env_;
};

TEST_F(MemoryEstimate, LlamaCppCountsTensorsKvForEverySlotAndCompute) {
  LlamaCppServer cpu(
      model("llamacpp", gguf_),
      options("llamacpp", {{"llamacpp_backend", "cpu"}, {"ctx_size", 1000}, {"parallel", 3}}),
      env_);
  DeviceBytes e = cpu.memory_estimate();
  ASSERT_EQ(e.size(), 1u) << "a CPU model holds only RAM";
  EXPECT_EQ(e["ram"], kTensorBytes + kKvPerToken * 1000 * 3 + kComputeFloor + kOverhead);

  // More slots, more KV cache: the estimate grows by exactly that.
  LlamaCppServer wider(
      model("llamacpp", gguf_),
      options("llamacpp", {{"llamacpp_backend", "cpu"}, {"ctx_size", 1000}, {"parallel", 4}}),
      env_);
  EXPECT_EQ(wider.memory_estimate()["ram"] - e["ram"], kKvPerToken * 1000);
}

TEST_F(MemoryEstimate, AGpuModelIsChargedToItsGpuAndTheProcessToRam) {
  LlamaCppServer gpu(
      model("llamacpp", gguf_),
      options("llamacpp",
              {{"llamacpp_backend", "vulkan"}, {"ctx_size", 2048}, {"parallel", 1}, {"gpu", 1}}),
      env_);
  DeviceBytes e = gpu.memory_estimate();
  EXPECT_EQ(e["gpu1"], kTensorBytes + kKvPerToken * 2048 + kComputeFloor);
  EXPECT_EQ(e["ram"], kOverhead);
  EXPECT_EQ(e.count("gpu0"), 0u);
}

TEST_F(MemoryEstimate, AFileThatIsNotGgufCountsItsSize) {
  const std::string blob = (dir_.path() / "blob.bin").string();
  std::ofstream(blob, std::ios::binary) << std::string(4096, 'x');
  LlamaCppServer cpu(model("llamacpp", blob), options("llamacpp", {{"llamacpp_backend", "cpu"}}),
                     env_);
  EXPECT_EQ(cpu.memory_estimate()["ram"], 4096 + kComputeFloor + kOverhead)
      << "no header: the file's size, no KV term";
  WhisperServer whisper(model("whispercpp", blob),
                        options("whispercpp", {{"whispercpp_backend", "cpu"}}), env_);
  EXPECT_EQ(whisper.memory_estimate()["ram"], 4096 + 4096 / 2 + kOverhead)
      << "not ggml: whisper's file and a half";
}

// The header of a model of whisper small's shape, then `weights` bytes.
void write_whisper_file(const std::string& path, std::size_t weights) {
  const std::int32_t hparams[] = {51864, 1500, 768, 12, 12, 448, 768, 12, 12, 80, 1};
  std::ofstream out(path, std::ios::binary);
  const std::uint32_t magic = 0x67676D6C;  // "ggml", little-endian
  out.write(reinterpret_cast<const char*>(&magic), 4);
  out.write(reinterpret_cast<const char*>(hparams), sizeof(hparams));
  out << std::string(weights, '\0');
}

// whisper.cpp (issue #31): the weights plus the buffers whisper_init_state
// allocates for the header's shape.
TEST_F(MemoryEstimate, WhisperAddsTheBuffersOfTheModelsShape) {
  const std::string path = (dir_.path() / "ggml-small.bin").string();
  write_whisper_file(path, 1000);
  WhisperServer whisper(model("whispercpp", path), options("whispercpp", {}), env_);
  const std::int64_t file = 4 + 44 + 1000;
  const std::int64_t cross = 2LL * 1500 * 768 * 12 * 2;  // f16 K and V
  const std::int64_t self = 2LL * 448 * 768 * 12 * 2;
  const std::int64_t logits = 51864LL * 448 * 4;
  const std::int64_t encoder = 3LL * 2 * 1500 * 768 * 4;
  EXPECT_EQ(whisper.memory_estimate()["ram"], file + cross + self + logits + encoder + kOverhead);
}

}  // namespace
}  // namespace lemon
