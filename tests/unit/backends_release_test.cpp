// Backend release names and URLs (Lemonade 9.4.1's Linux assets), pins from
// backend_versions.json, and LEMONADE_RELEASES_URL.
#include <gtest/gtest.h>

#include <fstream>

#include "lemon/backends/backend_release.h"
#include "support/scoped_env.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

nlohmann::json builtin_versions() {
  std::ifstream in(std::string(LEMON_RESOURCES_DIR) + "/backend_versions.json");
  return nlohmann::json::parse(in);
}

TEST(BackendsRelease, LinuxAssetsAndUrls) {
  struct Case {
    const char* recipe;
    const char* backend;
    const char* version;
    const char* url;
  } cases[] = {
      {"llamacpp", "cpu", "b8175",
       "https://github.com/ggml-org/llama.cpp/releases/download/b8175/"
       "llama-b8175-bin-ubuntu-x64.tar.gz"},
      {"llamacpp", "vulkan", "b8175",
       "https://github.com/ggml-org/llama.cpp/releases/download/b8175/"
       "llama-b8175-bin-ubuntu-vulkan-x64.tar.gz"},
      {"llamacpp", "rocm", "b1203",
       "https://github.com/lemonade-sdk/llamacpp-rocm/releases/download/b1203/"
       "llama-b1203-ubuntu-rocm-gfx1151-x64.zip"},
      {"whispercpp", "cpu", "v1.8.2",
       "https://github.com/lemonade-sdk/whisper.cpp-builds/releases/download/v1.8.2/"
       "whisper-v1.8.2-linux-cpu-x86_64.tar.gz"},
      {"whispercpp", "vulkan", "v1.8.2",
       "https://github.com/lemonade-sdk/whisper.cpp-builds/releases/download/v1.8.2/"
       "whisper-v1.8.2-linux-vulkan-x86_64.tar.gz"},
      {"sd-cpp", "cpu", "master-506-1f30df9",
       "https://github.com/superm1/stable-diffusion.cpp/releases/download/master-506-1f30df9/"
       "sd-master-1f30df9-bin-Linux-Ubuntu-24.04-x86_64.zip"},
      {"sd-cpp", "rocm", "master-506-1f30df9",
       "https://github.com/superm1/stable-diffusion.cpp/releases/download/master-506-1f30df9/"
       "sd-master-1f30df9-bin-Linux-Ubuntu-24.04-x86_64-rocm.zip"},
  };
  for (const auto& c : cases) {
    auto r = linux_release(c.recipe, c.backend, c.version, "https://github.com", "gfx1151");
    ASSERT_TRUE(r.ok()) << c.recipe << ":" << c.backend;
    EXPECT_EQ(r->url, c.url);
    EXPECT_EQ(r->executable, backend_executable(c.recipe));
  }
  EXPECT_EQ(linux_release("llamacpp", "rocm", "b1", "https://github.com", "").error().code(),
            ErrorCode::kUnsupportedOperation);
  for (auto [recipe, backend] : {std::pair{"llamacpp", "metal"}, std::pair{"flm", "npu"},
                                 std::pair{"ryzenai-llm", "npu"}, std::pair{"whispercpp", "npu"}}) {
    auto r = linux_release(recipe, backend, "v1", "https://github.com", "gfx1151");
    ASSERT_FALSE(r.ok()) << recipe << ":" << backend;
    EXPECT_EQ(r.error().code(), ErrorCode::kUnsupportedOperation);
  }
}

TEST(BackendsRelease, PinsComeFromTheVersionsFile) {
  auto v = builtin_versions();
  EXPECT_EQ(*pinned_version(v, "llamacpp", "cpu"), "b8175");
  EXPECT_EQ(pinned_version(v, "nope", "cpu").error().param(), "recipe");
  EXPECT_EQ(pinned_version(v, "llamacpp", "cuda").error().param(), "backend");
  EXPECT_EQ(pinned_version(v, "comment", "x").error().param(), "recipe");
}

TEST(BackendsRelease, ReleasesUrlAndTheUsersVersionsFile) {
  testing::ScopedEnv env;
  ASSERT_TRUE(env.set("LEMONADE_RELEASES_URL", "http://127.0.0.1:9/"));
  EXPECT_EQ(releases_base_url(), "http://127.0.0.1:9");
  testing::TempDir t;
  EXPECT_EQ(versions_file(t.path().string(), "/res"), "/res/backend_versions.json");
  t.write("backend_versions.json", "{}");
  EXPECT_EQ(versions_file(t.path().string(), "/res"),
            (t.path() / "backend_versions.json").string());
}

}  // namespace
}  // namespace lemon
