// GgufHeader: the fields a memory estimate needs, read from GGUF bytes built
// here; every truncation of a valid header is an error, never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "lemon/models/gguf_header.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

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

std::string tiny_llama() {
  GgufWriter w;
  w.put<std::uint32_t>(0x46554747u);
  w.put<std::uint32_t>(3);
  w.put<std::uint64_t>(2);  // tensors
  w.put<std::uint64_t>(8);  // key/value pairs
  w.kv_str("general.architecture", "llama");
  w.kv_string_array("tokenizer.ggml.tokens", 1000);
  w.kv_u32("llama.block_count", 2);
  w.kv_u32("llama.embedding_length", 64);
  w.kv_u32("llama.attention.head_count", 4);
  w.kv_u32("llama.attention.head_count_kv", 2);
  w.kv_u32("llama.context_length", 2048);
  w.kv_f32("llama.rope.freq_base", 10000.0f);
  w.tensor("token_embd.weight", {64, 64}, 1);  // F16: 4,096 x 2 bytes
  w.tensor("blk.0.ffn.weight", {256}, 2);      // Q4_0: 8 blocks of 18 bytes
  return w.bytes();
}

TEST(GgufHeader, ReadsWhatAnEstimateNeeds) {
  auto h = parse_gguf_header(tiny_llama());
  ASSERT_TRUE(h.ok()) << h.error().message();
  EXPECT_EQ(h->version, 3u);
  EXPECT_EQ(h->architecture, "llama");
  EXPECT_EQ(h->block_count, 2u);
  EXPECT_EQ(h->embedding_length, 64u);
  EXPECT_EQ(h->head_count, 4u);
  EXPECT_EQ(h->head_count_kv, 2u);
  EXPECT_EQ(h->key_length, 16u) << "embedding / heads when the file does not say";
  EXPECT_EQ(h->context_length, 2048u);
  EXPECT_EQ(h->tensor_count, 2u);
  EXPECT_EQ(h->tensor_bytes, 8192u + 144u);
  // 2 layers x 2 kv heads x (16 + 16) x 2 bytes.
  EXPECT_EQ(h->kv_bytes_per_token(), 256u);
}

TEST(GgufHeader, EveryTruncationIsAnErrorNotACrash) {
  const std::string whole = tiny_llama();
  for (std::size_t n = 0; n < whole.size(); ++n) {
    auto h = parse_gguf_header(std::string_view(whole).substr(0, n));
    EXPECT_FALSE(h.ok()) << "a header cut at " << n << " bytes was accepted";
  }
}

TEST(GgufHeader, HostileLengthsAreRefused) {
  std::string bytes = tiny_llama();
  // The first key's length (right after magic, version and the two counts)
  // claims far more than the file holds.
  const std::uint64_t huge = 1ull << 60;
  std::memcpy(bytes.data() + 24, &huge, sizeof huge);
  EXPECT_FALSE(parse_gguf_header(bytes).ok());
  EXPECT_FALSE(parse_gguf_header("GGML but not really").ok());
  std::string v1 = tiny_llama();
  v1[4] = 1;
  EXPECT_FALSE(parse_gguf_header(v1).ok()) << "version 1 is not supported";
}

TEST(GgufHeader, ReadsAFileAndNamesItOnError) {
  testing::TempDir dir("lemon-gguf");
  auto good = dir.write("m.gguf", tiny_llama() + std::string(1000, '\0'));
  auto h = read_gguf_header(good.string());
  ASSERT_TRUE(h.ok()) << h.error().message();
  EXPECT_EQ(h->block_count, 2u);
  auto bad = dir.write("bad.gguf", "GGUF fake model\n");
  auto e = read_gguf_header(bad.string());
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message().find(bad.string()), std::string::npos);
  EXPECT_EQ(read_gguf_header((dir.path() / "none.gguf").string()).error().code(),
            ErrorCode::kModelFilesMissing);
}

TEST(GgufHeader, TheSharedTinyModelIfPresent) {
  const std::filesystem::path model =
      std::filesystem::path(LEMON_SOURCE_DIR) / "../shared/models/tiny-llama-chat.gguf";
  if (!std::filesystem::exists(model)) {
    GTEST_SKIP() << model << " is not here (it lives beside the repository)";
  }
  auto h = read_gguf_header(model.string());
  ASSERT_TRUE(h.ok()) << h.error().message();
  EXPECT_EQ(h->architecture, "llama");
  EXPECT_EQ(h->block_count, 2u);
  EXPECT_EQ(h->embedding_length, 64u);
  EXPECT_GT(h->tensor_bytes, 1000000u);
  EXPECT_LE(h->tensor_bytes, std::filesystem::file_size(model));
}

}  // namespace
}  // namespace lemon
