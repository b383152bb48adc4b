// locate_backend_binary: LEMONADE_<RECIPE>_<BACKEND>_BIN, then PATH, then
// <cache>/bin/<recipe>/<backend>/ searched recursively; a set variable that
// points nowhere is an error, and "not found" names every place searched.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "lemon/backends/binary_locator.h"

namespace lemon {
namespace {

namespace fs = std::filesystem;

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
    std::string tmpl = ::testing::TempDir();
    if (tmpl.empty() || tmpl.back() != '/') {
      tmpl += '/';
    }
    tmpl += "lemon-locator-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = fs::path(tmpl);
    cache_ = root_ / "cache";
    fs::create_directories(cache_);
    // A PATH of our own, holding nothing yet, and no *_BIN variables.
    path_dir_ = root_ / "path";
    fs::create_directories(path_dir_);
    set_env("PATH", path_dir_.string());
    for (const char* v : {"LEMONADE_LLAMACPP_VULKAN_BIN", "LEMONADE_LLAMACPP_CPU_BIN",
                          "LEMONADE_FLM_BIN", "LEMONADE_SDCPP_ROCM_BIN"}) {
      unset_env(v);
    }
  }
  void TearDown() override {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        ::unsetenv(it->first.c_str());
      }
    }
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  void remember(const std::string& name) {
    if (std::any_of(saved_.begin(), saved_.end(), [&](const auto& p) { return p.first == name; })) {
      return;
    }
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
  }
  void set_env(const std::string& name, const std::string& value) {
    remember(name);
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  void unset_env(const std::string& name) {
    remember(name);
    ::unsetenv(name.c_str());
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
  fs::path root_;
  fs::path cache_;
  fs::path path_dir_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(BinaryLocator, EnvVarWinsOverPathAndCache) {
  fs::path from_env = make_exe(root_ / "env" / "llama-server");
  make_exe(path_dir_ / "llama-server");
  make_exe(cache_ / "bin" / "llamacpp" / "vulkan" / "llama-server");
  set_env("LEMONADE_LLAMACPP_VULKAN_BIN", from_env.string());
  EXPECT_EQ(located(locate_backend_binary(vulkan_, cache_.string())), from_env.string());
}

TEST_F(BinaryLocator, EnvVarMayNameAnyFileName) {
  fs::path from_env = make_exe(root_ / "env" / "my-custom-llama");
  set_env("LEMONADE_LLAMACPP_VULKAN_BIN", from_env.string());
  EXPECT_EQ(located(locate_backend_binary(vulkan_, cache_.string())), from_env.string());
}

TEST_F(BinaryLocator, EnvVarToMissingFileIsAnErrorNotAFallThrough) {
  make_exe(path_dir_ / "llama-server");  // would be found if the lookup fell through
  set_env("LEMONADE_LLAMACPP_VULKAN_BIN", (root_ / "typo" / "llama-server").string());
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
  set_env("LEMONADE_LLAMACPP_VULKAN_BIN", not_exe.string());
  auto r = locate_backend_binary(vulkan_, cache_.string());
  ASSERT_FALSE(r.ok()) << *r;
  EXPECT_EQ(r.error().code(), ErrorCode::kBackendBinaryMissing);
  EXPECT_NE(r.error().message().find("LEMONADE_LLAMACPP_VULKAN_BIN"), std::string::npos)
      << r.error().message();
}

TEST_F(BinaryLocator, EnvVarToDirectoryIsAnError) {
  fs::create_directories(root_ / "a-dir");
  set_env("LEMONADE_LLAMACPP_VULKAN_BIN", (root_ / "a-dir").string());
  auto r = locate_backend_binary(vulkan_, cache_.string());
  ASSERT_FALSE(r.ok()) << *r;
  EXPECT_EQ(r.error().code(), ErrorCode::kBackendBinaryMissing);
  EXPECT_NE(r.error().message().find("LEMONADE_LLAMACPP_VULKAN_BIN"), std::string::npos);
}

TEST_F(BinaryLocator, EmptyEnvVarCountsAsUnset) {
  fs::path on_path = make_exe(path_dir_ / "llama-server");
  set_env("LEMONADE_LLAMACPP_VULKAN_BIN", "");
  EXPECT_EQ(located(locate_backend_binary(vulkan_, cache_.string())), on_path.string());
}

TEST_F(BinaryLocator, OtherBackendsVariableIsIgnored) {
  set_env("LEMONADE_LLAMACPP_CPU_BIN", make_exe(root_ / "cpu" / "llama-server").string());
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
  set_env("PATH", "::" + first.string() + ":" + second.string() + ":" + third.string() + ":" +
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
  unset_env("PATH");
  auto r = locate_backend_binary({"sd-cpp", "rocm", "sd-server"}, cache_.string());
  ASSERT_FALSE(r.ok()) << *r;
  EXPECT_EQ(r.error().code(), ErrorCode::kBackendBinaryMissing);
  EXPECT_NE(r.error().message().find("LEMONADE_SDCPP_ROCM_BIN"), std::string::npos);
}

}  // namespace
}  // namespace lemon
