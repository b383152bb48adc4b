// Memory estimates of servers before they start (issue #13 §1): the default
// from the model's files, and llama.cpp's from its GGUF header.
#include <filesystem>

#include "lemon/backends/llamacpp_server.h"
#include "lemon/backends/process_server.h"
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

DeviceBytes LlamaCppServer::memory_estimate() const {
  const std::string main = model().resolved_path("main");
  std::int64_t weights = path_bytes(main);
  std::int64_t kv = 0;
  if (auto header = GgufHeaderCache::shared().get(main); header.ok()) {
    if (header->tensor_bytes > 0) {
      weights = static_cast<std::int64_t>(header->tensor_bytes);
    }
    const auto slots = this->slots();
    const std::int64_t tokens =
        static_cast<std::int64_t>(slots.ctx_size) * std::max(1, slots.total);
    kv = static_cast<std::int64_t>(header->kv_bytes_per_token()) * tokens;
  }
  const std::int64_t mmproj = path_bytes(model().resolved_path("mmproj"));
  // Compute buffers grow with the model; a floor for small ones.
  const std::int64_t compute = std::max<std::int64_t>(32 * MiB, weights / 20);
  DeviceBytes out;
  out[model_device(*this)] += weights + mmproj + kv + compute;
  out[kRamDevice] += kProcessOverhead;
  return out;
}

std::int64_t ProcessServer::measured_rss() const {
  auto p = pid();
  return p ? group_resident_bytes(*p) : 0;
}

}  // namespace lemon
