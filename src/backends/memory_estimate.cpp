// Memory estimates of servers before they start: the default
// from the model's files, llama.cpp's from its GGUF header, whisper.cpp's
// from its ggml header, stable-diffusion.cpp's from its files and the image
// size.
#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "lemon/backends/llamacpp_server.h"
#include "lemon/backends/process_server.h"
#include "lemon/backends/sd_server.h"
#include "lemon/backends/speculation.h"
#include "lemon/backends/user_args.h"
#include "lemon/backends/whisper_server.h"
#include "lemon/models/gguf_header_cache.h"
#include "lemon/process/process_memory.h"

namespace lemon {
namespace {

namespace fs = std::filesystem;
constexpr std::int64_t MiB = std::int64_t{1024} * 1024;
// The backend process itself (code, runtime, host buffers).
constexpr std::int64_t kProcessOverhead = 64 * MiB;

std::int64_t path_bytes(const std::string& path) {
  std::error_code ec;
  if (path.empty()) {
    return 0;
  }
  if (fs::is_directory(path, ec)) {
    std::int64_t total = 0;
    for (const auto& e : fs::recursive_directory_iterator(path, ec)) {
      if (e.is_regular_file(ec)) {
        total += static_cast<std::int64_t>(e.file_size(ec));
      }
    }
    return total;
  }
  auto size = fs::file_size(path, ec);
  return ec ? 0 : static_cast<std::int64_t>(size);
}

// Where a server's model lives: its GPU's memory, or system RAM.
std::string model_device(const WrappedServer& s) {
  if (s.device() & Device::kGpu) {
    return gpu_device(s.options().int_value("gpu", 0));
  }
  return kRamDevice;
}

}  // namespace

DeviceBytes WrappedServer::memory_estimate() const {
  std::int64_t files = 0;
  for (const auto& [role, path] : model().resolved_paths) {
    files += path_bytes(path);
  }
  DeviceBytes out;
  const std::string where = model_device(*this);
  out[where] += files;
  out[kRamDevice] += kProcessOverhead;
  return out;
}

namespace {

// Compute buffers grow with the model; a floor for small ones.
std::int64_t compute_bytes(std::int64_t weights) {
  return std::max<std::int64_t>(32 * MiB, weights / 20);
}

// A GGUF model's weights and its KV cache for `tokens` tokens of context,
// from its header (the file's size and no KV without one).
struct GgufFootprint {
  std::int64_t weights = 0;
  std::int64_t kv = 0;
  std::uint64_t kv_per_token = 0;
  std::uint64_t layers = 0;
  std::uint64_t nextn_layers = 0;
};
GgufFootprint gguf_footprint(const std::string& path, std::int64_t tokens) {
  GgufFootprint f;
  f.weights = path_bytes(path);
  if (auto header = GgufHeaderCache::shared().get(path); header.ok()) {
    if (header->tensor_bytes > 0) {
      f.weights = static_cast<std::int64_t>(header->tensor_bytes);
    }
    f.kv_per_token = header->kv_bytes_per_token();
    f.kv = static_cast<std::int64_t>(f.kv_per_token) * tokens;
    f.layers = header->block_count;
    f.nextn_layers = header->nextn_predict_layers;
  }
  return f;
}

}  // namespace

DeviceBytes LlamaCppServer::memory_estimate() const {
  return memory_estimate_at(slots().ctx_size);
}

std::optional<int> LlamaCppServer::trained_context() const {
  auto header = GgufHeaderCache::shared().get(model().resolved_path("main"));
  if (!header.ok() || header->context_length == 0 ||
      header->context_length > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
    return std::nullopt;
  }
  return static_cast<int>(header->context_length);
}

DeviceBytes LlamaCppServer::memory_estimate_at(int ctx_size) const {
  const auto slots = this->slots();
  const std::int64_t tokens =
      static_cast<std::int64_t>(context_per_slot(ctx_size)) * std::max(1, slots.total);
  const GgufFootprint main = gguf_footprint(model().resolved_path("main"), tokens);
  const std::int64_t mmproj = path_bytes(model().resolved_path("mmproj"));
  DeviceBytes out;
  out[model_device(*this)] +=
      main.weights + mmproj + main.kv + compute_bytes(main.weights) + speculation_bytes(tokens);
  out[kRamDevice] += kProcessOverhead;
  return out;
}

std::int64_t LlamaCppServer::speculation_bytes(std::int64_t tokens) const {
  auto user = split_user_args(options().string_value("llamacpp_args"));
  const Speculation s =
      speculation_of(model(), options(), user.ok() ? *user : std::vector<std::string>{});
  if (!s.draft_path.empty()) {
    // A draft model: its weights, its own KV cache for the target's whole
    // context (llama-server gives the draft the target's n_ctx) and its
    // compute buffers, on the model's device.
    const GgufFootprint draft = gguf_footprint(s.draft_path, tokens);
    return draft.weights + draft.kv + compute_bytes(draft.weights);
  }
  if (s.mtp) {
    // The model's own prediction layers: no weights of their own, but a
    // context whose KV cache holds those layers (one when the header does
    // not say).
    const GgufFootprint main = gguf_footprint(model().resolved_path("main"), tokens);
    if (main.layers == 0) {
      return 32 * MiB;
    }
    const std::uint64_t layers = std::max<std::uint64_t>(1, main.nextn_layers);
    return static_cast<std::int64_t>(main.kv_per_token * layers / main.layers) * tokens + 32 * MiB;
  }
  return 0;
}

namespace {

// whisper.cpp's ggml model header: the "ggml" magic, then n_vocab,
// n_audio_ctx, n_audio_state, n_audio_head, n_audio_layer, n_text_ctx,
// n_text_state, n_text_head, n_text_layer, n_mels, ftype (int32 each,
// little-endian; src/whisper.cpp, whisper_model_load).
struct WhisperShape {
  std::int64_t vocab = 0, audio_ctx = 0, audio_state = 0, audio_layers = 0, text_ctx = 0,
               text_state = 0, text_layers = 0;
};

std::optional<WhisperShape> read_whisper_shape(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<unsigned char, 48> head{};
  if (!in.read(reinterpret_cast<char*>(head.data()), head.size())) {
    return std::nullopt;
  }
  auto word = [&head](std::size_t i) {
    std::uint32_t v = 0;
    for (std::size_t b = 4; b-- > 0;) {
      v = (v << 8) | head[i * 4 + b];
    }
    return static_cast<std::int64_t>(static_cast<std::int32_t>(v));
  };
  if (static_cast<std::uint32_t>(word(0)) != 0x67676D6Cu) {  // "ggml"
    return std::nullopt;
  }
  WhisperShape s{word(1), word(2), word(3), word(5), word(6), word(7), word(9)};
  const bool sane = s.vocab > 0 && s.vocab < 1'000'000 && s.audio_ctx > 0 &&
                    s.audio_ctx < 100'000 && s.audio_state > 0 && s.audio_state < 100'000 &&
                    s.audio_layers > 0 && s.audio_layers < 1'000 && s.text_ctx > 0 &&
                    s.text_ctx < 100'000 && s.text_state > 0 && s.text_state < 100'000 &&
                    s.text_layers > 0 && s.text_layers < 1'000;
  return sane ? std::optional<WhisperShape>(s) : std::nullopt;
}

}  // namespace

// Weights, then whisper_init_state's buffers (whisper.cpp v1.8.2): the
// cross-attention cache (2 x audio_ctx x state x layers, f16), the
// self-attention cache (2 x text_ctx x state x layers, f16), the decoder's
// logits (vocab x text_ctx, f32) and the encoder's activations (about
// 3 x 2 x audio_ctx x state, f32). Checked against the process's RSS after a
// transcription, for random-weight models of tiny, base and small's shapes
// (docs/benchmarks.md "Real backends"). A file that is not ggml: its size
// and a half.
DeviceBytes WhisperServer::memory_estimate() const {
  const std::string main = model().resolved_path("main");
  const std::int64_t weights = path_bytes(main);
  std::int64_t state = weights / 2;
  if (auto s = read_whisper_shape(main)) {
    const std::int64_t cross = 2 * s->audio_ctx * s->audio_state * s->text_layers * 2;
    const std::int64_t self = 2 * s->text_ctx * s->text_state * s->text_layers * 2;
    const std::int64_t logits = s->vocab * s->text_ctx * 4;
    const std::int64_t encoder = std::int64_t{3} * 2 * s->audio_ctx * s->audio_state * 4;
    state = cross + self + logits + encoder;
  }
  DeviceBytes out;
  out[model_device(*this)] += weights + state;
  out[kRamDevice] += kProcessOverhead;
  return out;
}

// Weights, then the compute buffers of one image of the load options' size:
// sd-server (1f30df9, CPU) with an SDXS-shaped model held 0.87 GiB after
// loading and peaked 0.12 GiB above that at 256x256 and 0.47 GiB at 512x512,
// about 2 KiB a pixel; 2.5 KiB are counted (tests/real/sd_server_test.cpp checks
// the estimate against the peak).
DeviceBytes SdServer::memory_estimate() const {
  std::int64_t weights = 0;
  for (const auto& [role, path] : model().resolved_paths) {
    weights += path_bytes(path);
  }
  const std::int64_t width = std::max(64, options().int_value("width", 512));
  const std::int64_t height = std::max(64, options().int_value("height", 512));
  const std::int64_t compute = std::max<std::int64_t>(64 * MiB, width * height * 2560);
  DeviceBytes out;
  out[model_device(*this)] += weights + compute;
  out[kRamDevice] += kProcessOverhead;
  return out;
}

std::int64_t ProcessServer::measured_rss() const {
  auto p = pid();
  return p ? group_resident_bytes(*p) : 0;
}

}  // namespace lemon
