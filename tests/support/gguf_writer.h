// GgufWriter: GGUF v3 bytes built in a test (little-endian), and a tiny
// llama-architecture header: 2 layers, 64-wide embeddings, 4 heads of which
// 2 for K/V, an F16 and a Q4_0 tensor (8,336 tensor bytes; 256 bytes of KV
// cache per token).
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>

namespace lemon::testing {

// Writes GGUF v3 in its little-endian layout.
class GgufWriter {
 public:
  template <typename T>
  void put(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_.append(b, sizeof(T));
  }
  void str(const std::string& s) {
    put<std::uint64_t>(s.size());
    out_ += s;
  }
  void kv_u32(const std::string& key, std::uint32_t v) {
    str(key);
    put<std::uint32_t>(4);
    put(v);
  }
  void kv_str(const std::string& key, const std::string& v) {
    str(key);
    put<std::uint32_t>(8);
    str(v);
  }
  void kv_string_array(const std::string& key, int n) {
    str(key);
    put<std::uint32_t>(9);
    put<std::uint32_t>(8);
    put<std::uint64_t>(n);
    for (int i = 0; i < n; ++i) {
      str("tok" + std::to_string(i));
    }
  }
  void kv_f32(const std::string& key, float v) {
    str(key);
    put<std::uint32_t>(6);
    put(v);
  }
  void tensor(const std::string& name, std::initializer_list<std::uint64_t> dims,
              std::uint32_t type) {
    str(name);
    put<std::uint32_t>(static_cast<std::uint32_t>(dims.size()));
    for (auto d : dims) {
      put(d);
    }
    put(type);
    put<std::uint64_t>(0);
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

// `context_length`: the training context; `nextn_layers` > 0 adds
// llama.nextn_predict_layers (a model with multi-token prediction).
inline std::string tiny_llama_gguf(std::uint32_t context_length = 2048,
                                   std::uint32_t nextn_layers = 0) {
  GgufWriter w;
  w.put<std::uint32_t>(0x46554747u);
  w.put<std::uint32_t>(3);
  w.put<std::uint64_t>(2);                         // tensors
  w.put<std::uint64_t>(nextn_layers > 0 ? 9 : 8);  // key/value pairs
  w.kv_str("general.architecture", "llama");
  w.kv_string_array("tokenizer.ggml.tokens", 1000);
  w.kv_u32("llama.block_count", 2);
  w.kv_u32("llama.embedding_length", 64);
  w.kv_u32("llama.attention.head_count", 4);
  w.kv_u32("llama.attention.head_count_kv", 2);
  w.kv_u32("llama.context_length", context_length);
  if (nextn_layers > 0) {
    w.kv_u32("llama.nextn_predict_layers", nextn_layers);
  }
  w.kv_f32("llama.rope.freq_base", 10000.0f);
  w.tensor("token_embd.weight", {64, 64}, 1);  // F16: 4,096 x 2 bytes
  w.tensor("blk.0.ffn.weight", {256}, 2);      // Q4_0: 8 blocks of 18 bytes
  return w.bytes();
}

}  // namespace lemon::testing
