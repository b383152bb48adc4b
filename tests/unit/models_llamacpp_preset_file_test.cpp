// llama-server's preset files (llamacpp_preset_file.h): llama.cpp's README
// example read into presets of ours, and broken files refused with the file
// and line of the problem.
#include "lemon/models/llamacpp_preset_file.h"

#include <gtest/gtest.h>

namespace lemon {
namespace {

// llama.cpp's tools/server/README.md example ("Using multiple models"),
// without its n-gpu-layers lines (the router sets the GPU layers itself;
// see RouterOwnedOptionsAreRefusedWithTheirLine).
constexpr const char* kReadmeExample = R"(version = 1

; comment
[*]
c = 8192

[ggml-org/MY-MODEL-GGUF:q8_0]
chat-template = chatml
jinja = true
c = 4096
LLAMA_ARG_CACHE_RAM = 0
model-draft = /Users/abc/my-models/draft.gguf

[custom_model]
model = /Users/abc/my-awesome-model-Q4_K_M.gguf
)";

TEST(LlamaCppPresetFile, ReadsTheReadmeExample) {
  auto presets = parse_llamacpp_presets(kReadmeExample, "models.ini");
  ASSERT_TRUE(presets.ok()) << presets.error().message();
  ASSERT_EQ(presets->size(), 2U);

  const IniPreset& hub = (*presets)[0];
  EXPECT_EQ(hub.preset.id, "ggml-org/MY-MODEL-GGUF:Q8_0") << "the tag is upper-cased";
  EXPECT_EQ(hub.preset.model, "ggml-org/MY-MODEL-GGUF:Q8_0");
  // The section's c wins over [*]'s; the rest goes to llamacpp_args.
  EXPECT_EQ(hub.preset.load_options.int_value("ctx_size", 0), 4096);
  const std::string args = hub.preset.load_options.string_value("llamacpp_args");
  EXPECT_NE(args.find("--chat-template chatml"), std::string::npos) << args;
  EXPECT_NE(args.find("--jinja"), std::string::npos) << args;
  EXPECT_NE(args.find("--cache-ram 0"), std::string::npos) << args;
  EXPECT_NE(args.find("/Users/abc/my-models/draft.gguf"), std::string::npos) << args;
  EXPECT_EQ(hub.text.rfind("[ggml-org/MY-MODEL-GGUF:Q8_0]\n", 0), 0U) << hub.text;

  const IniPreset& custom = (*presets)[1];
  EXPECT_EQ(custom.preset.id, "custom_model");
  EXPECT_EQ(custom.preset.model, "/Users/abc/my-awesome-model-Q4_K_M.gguf");
  EXPECT_EQ(custom.preset.load_options.int_value("ctx_size", 0), 8192) << "[*]'s c is inherited";
}

TEST(LlamaCppPresetFile, PresetOnlyKeysAndLists) {
  auto presets = parse_llamacpp_presets(
      "[m]\nload-on-startup = true\nstop-timeout = 5\nalias = one, two\ntags = vision\n", "p.ini");
  ASSERT_TRUE(presets.ok()) << presets.error().message();
  ASSERT_EQ(presets->size(), 1U);
  EXPECT_TRUE((*presets)[0].load_on_startup);
  EXPECT_EQ((*presets)[0].stop_timeout_s, 5);
  EXPECT_EQ((*presets)[0].aliases, (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ((*presets)[0].tags, (std::vector<std::string>{"vision"}));
}

// The error names the file and the line.
void expect_error_at(const std::string& text, const std::string& where) {
  auto presets = parse_llamacpp_presets(text, "p.ini");
  ASSERT_FALSE(presets.ok()) << text;
  EXPECT_EQ(presets.error().code(), ErrorCode::kInvalidOption);
  EXPECT_NE(presets.error().message().find(where), std::string::npos) << presets.error().message();
}

TEST(LlamaCppPresetFile, BrokenFilesNameTheirLine) {
  expect_error_at("[a]\nc = 1\nthis is no key\n", "p.ini:3:");
  expect_error_at("version = 1\n[a\n", "p.ini:2:");
  expect_error_at("[a]\n\n; x\nno-such-option = 1\n", "p.ini:4:");
  expect_error_at("[a]\nc = many\n", "p.ini:2:");
  expect_error_at("[a]\nload-on-startup = maybe\n", "p.ini:2:");
  expect_error_at("[a]\nmodel = relative.gguf\n", "p.ini:2:");
}

TEST(LlamaCppPresetFile, RouterOwnedOptionsAreRefusedWithTheirLine) {
  expect_error_at("[*]\nc = 8192\nn-gpu-layers = 8\n", "p.ini:3:");
  expect_error_at("[a]\nport = 9000\n", "p.ini:2:");
}

}  // namespace
}  // namespace lemon
