// GgufHeader: the fields a memory estimate needs, read from GGUF bytes built
// here; every truncation of a valid header is an error, never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "lemon/models/gguf_header.h"
#include "support/gguf_writer.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

using testing::GgufWriter;
using testing::tiny_llama_gguf;

TEST(GgufHeader, ReadsWhatAnEstimateNeeds) {
  auto h = parse_gguf_header(tiny_llama_gguf());
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
  const std::string whole = tiny_llama_gguf();
  for (std::size_t n = 0; n < whole.size(); ++n) {
    auto h = parse_gguf_header(std::string_view(whole).substr(0, n));
    EXPECT_FALSE(h.ok()) << "a header cut at " << n << " bytes was accepted";
  }
}

TEST(GgufHeader, HostileLengthsAreRefused) {
  std::string bytes = tiny_llama_gguf();
  // The first key's length (right after magic, version and the two counts)
  // claims far more than the file holds.
  const std::uint64_t huge = 1ull << 60;
  std::memcpy(bytes.data() + 24, &huge, sizeof huge);
  EXPECT_FALSE(parse_gguf_header(bytes).ok());
  EXPECT_FALSE(parse_gguf_header("GGML but not really").ok());
  std::string v1 = tiny_llama_gguf();
  v1[4] = 1;
  EXPECT_FALSE(parse_gguf_header(v1).ok()) << "version 1 is not supported";
}

TEST(GgufHeader, ReadsAFileAndNamesItOnError) {
  testing::TempDir dir("lemon-gguf");
  auto good = dir.write("m.gguf", tiny_llama_gguf() + std::string(1000, '\0'));
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
