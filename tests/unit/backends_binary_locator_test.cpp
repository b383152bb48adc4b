// locate_backend_binary: LEMONADE_<RECIPE>_<BACKEND>_BIN, then PATH, then
// <cache>/bin/<recipe>/<backend>/ searched recursively; a set variable that
// points nowhere is an error, and "not found" names every place searched.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "lemon/backends/binary_locator.h"
#include "support/scoped_env.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

namespace fs = std::filesystem;
using testing::ScopedEnv;
using testing::TempDir;

TEST(BinaryEnvVar, Names) {
  EXPECT_EQ(binary_env_var({"llamacpp", "cpu", "llama-server"}), "LEMONADE_LLAMACPP_CPU_BIN");
  EXPECT_EQ(binary_env_var({"llamacpp", "vulkan", "llama-server"}), "LEMONADE_LLAMACPP_VULKAN_BIN");
  EXPECT_EQ(binary_env_var({"sd-cpp", "rocm", "sd-server"}), "LEMONADE_SDCPP_ROCM_BIN");
  EXPECT_EQ(binary_env_var({"flm", "", "flm"}), "LEMONADE_FLM_BIN");
  EXPECT_EQ(binary_env_var({"ryzenai-llm", "npu", "ryzenai-server"}),
            "LEMONADE_RYZENAILLM_NPU_BIN");
  EXPECT_EQ(binary_env_var({"whispercpp", "npu", "whisper-server"}), "LEMONADE_WHISPERCPP_NPU_BIN");
}

class BinaryLocator : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(cache_);
    // A PATH of our own, holding nothing yet, and no *_BIN variables.
    fs::create_directories(path_dir_);
    env_.set("PATH", path_dir_.string());
    for (const char* v : {"LEMONADE_LLAMACPP_VULKAN_BIN", "LEMONADE_LLAMACPP_CPU_BIN",
                          "LEMONADE_FLM_BIN", "LEMONADE_SDCPP_ROCM_BIN"}) {
      env_.unset(v);
    }
  }

  // Creates a file (and its directories) with the given mode.
  static fs::path make_file(const fs::path& p, mode_t mode) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "#!/bin/sh\nexit 0\n";
    EXPECT_EQ(::chmod(p.c_str(), mode), 0);
    return p;
  }
  static fs::path make_exe(const fs::path& p) { return make_file(p, 0755); }

  static std::string located(const Result<std::string>& r) {
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
    return r.ok() ? *r : std::string();
  }

  const BinaryQuery vulkan_{"llamacpp", "vulkan", "llama-server"};
  TempDir dir_{"lemon-locator"};
  const fs::path root_ = dir_.path();
  const fs::path cache_ = root_ / "cache";
  const fs::path path_dir_ = root_ / "path";
  ScopedEnv env_;
};

TEST_F(BinaryLocator, EnvVarWinsOverPathAndCache) {
  fs::path from_env = make_exe(root_ / "env" / "llama-server");
  make_exe(path_dir_ / "llama-server");
  make_exe(cache_ / "bin" / "llamacpp" / "vulkan" / "llama-server");
  env_.set("LEMONADE_LLAMACPP_VULKAN_BIN", from_env.string());
  EXPECT_EQ(located(locate_backend_binary(vulkan_, cache_.string())), from_env.string());
}

TEST_F(BinaryLocator, EnvVarMayNameAnyFileName) {
  fs::path from_env = make_exe(root_ / "env" / "my-custom-llama");
  env_.set("LEMONADE_LLAMACPP_VULKAN_BIN", from_env.string());
  EXPECT_EQ(located(locate_backend_binary(vulkan_, cache_.string())), from_env.string());
}

TEST_F(BinaryLocator, EnvVarToMissingFileIsAnErrorNotAFallThrough) {
  make_exe(path_dir_ / "llama-server");  // would be found if the lookup fell through
  env_.set("LEMONADE_LLAMACPP_VULKAN_BIN", (root_ / "typo" / "llama-server").string());
  auto r = locate_backend_binary(vulkan_, cache_.string());
  ASSERT_FALSE(r.ok()) << *r;
  EXPECT_EQ(r.error().code(), ErrorCode::kBackendBinaryMissing);
  EXPECT_NE(r.error().message().find("LEMONADE_LLAMACPP_VULKAN_BIN"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find((root_ / "typo" / "llama-server").string()), std::string::npos)
      << r.error().message();
}

TEST_F(BinaryLocator, EnvVarToNonExecutableFileIsAnError) {
  fs::path not_exe = make_file(root_ / "env" / "llama-server", 0644);
  make_exe(cache_ / "bin" / "llamacpp" / "vulkan" / "llama-server");
  env_.set("LEMONADE_LLAMACPP_VULKAN_BIN", not_exe.string());
  auto r = locate_backend_binary(vulkan_, cache_.string());
  ASSERT_FALSE(r.ok()) << *r;
  EXPECT_EQ(r.error().code(), ErrorCode::kBackendBinaryMissing);
  EXPECT_NE(r.error().message().find("LEMONADE_LLAMACPP_VULKAN_BIN"), std::string::npos)
      << r.error().message();
}

TEST_F(BinaryLocator, EnvVarToDirectoryIsAnError) {
  fs::create_directories(root_ / "a-dir");
  env_.set("LEMONADE_LLAMACPP_VULKAN_BIN", (root_ / "a-dir").string());
  auto r = locate_backend_binary(vulkan_, cache_.string());
  ASSERT_FALSE(r.ok()) << *r;
  EXPECT_EQ(r.error().code(), ErrorCode::kBackendBinaryMissing);
  EXPECT_NE(r.error().message().find("LEMONADE_LLAMACPP_VULKAN_BIN"), std::string::npos);
}

TEST_F(BinaryLocator, EmptyEnvVarCountsAsUnset) {
  fs::path on_path = make_exe(path_dir_ / "llama-server");
  env_.set("LEMONADE_LLAMACPP_VULKAN_BIN", "");
  EXPECT_EQ(located(locate_backend_binary(vulkan_, cache_.string())), on_path.string());
}

TEST_F(BinaryLocator, OtherBackendsVariableIsIgnored) {
  env_.set("LEMONADE_LLAMACPP_CPU_BIN", make_exe(root_ / "cpu" / "llama-server").string());
  fs::path on_path = make_exe(path_dir_ / "llama-server");
  EXPECT_EQ(located(locate_backend_binary(vulkan_, cache_.string())), on_path.string());
}

TEST_F(BinaryLocator, PathWinsOverCache) {
  fs::path on_path = make_exe(path_dir_ / "llama-server");
  make_exe(cache_ / "bin" / "llamacpp" / "vulkan" / "llama-server");
  EXPECT_EQ(located(locate_backend_binary(vulkan_, cache_.string())), on_path.string());
}

TEST_F(BinaryLocator, PathIsSearchedInOrderSkippingNonExecutables) {
  fs::path first = root_ / "p1";
  fs::path second = root_ / "p2";
  fs::path third = root_ / "p3";
  make_file(first / "llama-server", 0644);  // not executable: skipped
  fs::create_directories(second);           // no binary here
  fs::path found = make_exe(third / "llama-server");
  make_exe(root_ / "p4" / "llama-server");  // later entry: not reached
  env_.set("PATH", "::" + first.string() + ":" + second.string() + ":" + third.string() + ":" +
                       (root_ / "p4").string());
  EXPECT_EQ(located(locate_backend_binary(vulkan_, cache_.string())), found.string());
}

TEST_F(BinaryLocator, CacheInstallDirIsSearchedRecursively) {
  fs::path nested = make_exe(cache_ / "bin" / "llamacpp" / "vulkan" / "llama-b8175" / "build" /
                             "bin" / "llama-server");
  EXPECT_EQ(located(locate_backend_binary(vulkan_, cache_.string())), nested.string());
}

TEST_F(BinaryLocator, CacheSearchSkipsNonExecutablesAndOtherBackends) {
  make_exe(cache_ / "bin" / "llamacpp" / "cpu" / "llama-server");  // wrong backend
  make_file(cache_ / "bin" / "llamacpp" / "vulkan" / "a" / "llama-server", 0644);
  auto r = locate_backend_binary(vulkan_, cache_.string());
  ASSERT_FALSE(r.ok()) << *r;
  EXPECT_EQ(r.error().code(), ErrorCode::kBackendBinaryMissing);

  fs::path good = make_exe(cache_ / "bin" / "llamacpp" / "vulkan" / "b" / "llama-server");
  EXPECT_EQ(located(locate_backend_binary(vulkan_, cache_.string())), good.string());
}

TEST_F(BinaryLocator, RecipeWithoutBackendUsesRecipeDir) {
  fs::path flm = make_exe(cache_ / "bin" / "flm" / "v0.9.34" / "flm");
  EXPECT_EQ(located(locate_backend_binary({"flm", "", "flm"}, cache_.string())), flm.string());
}

TEST_F(BinaryLocator, NotFoundNamesEveryPlaceSearched) {
  auto r = locate_backend_binary(vulkan_, cache_.string());
  ASSERT_FALSE(r.ok()) << *r;
  EXPECT_EQ(r.error().code(), ErrorCode::kBackendBinaryMissing);
  const std::string& m = r.error().message();
  EXPECT_NE(m.find("llama-server"), std::string::npos) << m;
  EXPECT_NE(m.find("LEMONADE_LLAMACPP_VULKAN_BIN"), std::string::npos) << m;
  EXPECT_NE(m.find("PATH"), std::string::npos) << m;
  EXPECT_NE(m.find((cache_ / "bin" / "llamacpp" / "vulkan").string()), std::string::npos) << m;
}

TEST_F(BinaryLocator, NotFoundWhenPathIsUnset) {
  env_.unset("PATH");
  auto r = locate_backend_binary({"sd-cpp", "rocm", "sd-server"}, cache_.string());
  ASSERT_FALSE(r.ok()) << *r;
  EXPECT_EQ(r.error().code(), ErrorCode::kBackendBinaryMissing);
  EXPECT_NE(r.error().message().find("LEMONADE_SDCPP_ROCM_BIN"), std::string::npos);
}

TEST_F(BinaryLocator, APathFromTheSettingsWinsAndAMissingOneIsAnError) {
  fs::path configured = make_exe(root_ / "conf" / "llama-server");
  make_exe(path_dir_ / "llama-server");
  BinarySettings settings;
  settings.paths["LEMONADE_LLAMACPP_VULKAN_BIN"] = configured.string();
  EXPECT_EQ(located(locate_backend_binary(vulkan_, cache_.string(), settings)),
            configured.string());
  settings.paths["LEMONADE_LLAMACPP_VULKAN_BIN"] = (root_ / "nowhere" / "llama-server").string();
  auto r = locate_backend_binary(vulkan_, cache_.string(), settings);
  ASSERT_FALSE(r.ok()) << *r;
  EXPECT_EQ(r.error().code(), ErrorCode::kBackendBinaryMissing);
  EXPECT_NE(r.error().message().find("nowhere"), std::string::npos) << r.error().message();
}

TEST_F(BinaryLocator, InstalledFirstSearchesTheInstallBeforePath) {
  fs::path on_path = make_exe(path_dir_ / "llama-server");
  fs::path installed = make_exe(cache_ / "bin" / "llamacpp" / "vulkan" / "llama-server");
  EXPECT_EQ(located(locate_backend_binary(vulkan_, cache_.string())), on_path.string())
      << "PATH wins (llamacpp.prefer_system: true)";
  BinarySettings settings;
  settings.installed_first.insert("llamacpp");
  EXPECT_EQ(located(locate_backend_binary(vulkan_, cache_.string(), settings)), installed.string());
  fs::remove(installed);
  EXPECT_EQ(located(locate_backend_binary(vulkan_, cache_.string(), settings)), on_path.string())
      << "PATH still serves when nothing is installed";
}

}  // namespace
}  // namespace lemon
