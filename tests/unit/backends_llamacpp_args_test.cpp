// LlamaCppServer: the llama-server command line (Lemonade 9.4.1's plus
// --host), router-owned flags refused in llamacpp_args, user-overridable
// defaults dropped by exact flag name, routes and device per backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "lemon/backends/llamacpp_server.h"

namespace lemon {
namespace {

using Args = std::vector<std::string>;
using nlohmann::json;

constexpr const char* kGguf = "/models/Qwen3-0.6B-Q4_K_M.gguf";
constexpr const char* kMmproj = "/models/mmproj-F16.gguf";
constexpr int kPort = 8123;

class LlamaCppArgs : public ::testing::Test {
 protected:
  static ModelInfo model(ModelType type = ModelType::kLlm, bool with_mmproj = false) {
    ModelInfo info;
    info.name = "Test-Model-GGUF";
    info.recipe = "llamacpp";
    info.type = type;
    info.checkpoints["main"] = "org/Test-Model-GGUF:Q4_K_M";
    info.resolved_paths["main"] = kGguf;
    if (with_mmproj) {
      info.checkpoints["mmproj"] = "org/Test-Model-GGUF:mmproj-F16.gguf";
      info.resolved_paths["mmproj"] = kMmproj;
    }
    info.downloaded = true;
    return info;
  }

  static RecipeOptions options(const json& j) {
    auto r = RecipeOptions::from_json("llamacpp", j);
    EXPECT_TRUE(r.ok()) << j.dump();
    return r.ok() ? *r : RecipeOptions{};
  }

  LlamaCppServer server(const json& opts, ModelType type = ModelType::kLlm,
                        bool with_mmproj = false) const {
    return LlamaCppServer(model(type, with_mmproj), options(opts), env_);
  }

  static Args args_of(const LlamaCppServer& s, int port = kPort) {
    auto r = s.build_args(port);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
    return r.ok() ? *r : Args{};
  }

  static int count(const Args& args, const std::string& word) {
    return static_cast<int>(std::count(args.begin(), args.end(), word));
  }

  // The value following the first occurrence of `flag`, or "".
  static std::string value_of(const Args& args, const std::string& flag) {
    auto it = std::find(args.begin(), args.end(), flag);
    return it == args.end() || it + 1 == args.end() ? "" : *(it + 1);
  }

  BackendEnvironment env_;  // launcher/ports unused by build_args
};

// ---- whole command lines ------------------------------------------------------

TEST_F(LlamaCppArgs, CpuLlmCommandLine) {
  auto s = server({{"llamacpp_backend", "cpu"}, {"ctx_size", 2048}});
  EXPECT_EQ(args_of(s), (Args{"-m", kGguf, "--ctx-size", "2048", "--parallel", "1", "--port",
                              "8123", "--host", "127.0.0.1", "--jinja", "--keep", "16",
                              "--reasoning-format", "auto", "--no-webui", "-ngl", "0"}));
}

TEST_F(LlamaCppArgs, ParallelSlotsEachGetTheWholeContext) {
  // llama-server splits --ctx-size between --parallel slots, so the router
  // asks for parallel x ctx_size tokens: each request gets ctx_size.
  auto s = server({{"llamacpp_backend", "cpu"}, {"ctx_size", 2048}, {"parallel", 4}});
  Args args = args_of(s);
  EXPECT_EQ(value_of(args, "--ctx-size"), "8192");
  EXPECT_EQ(value_of(args, "--parallel"), "4");
  EXPECT_EQ(count(args, "--kv-unified"), 0);
  EXPECT_EQ(s.slots().total, 4);
  EXPECT_EQ(s.slots().ctx_size, 2048);
}

TEST_F(LlamaCppArgs, EmbeddingSlotsKeepTheirMinimumContextEach) {
  auto s = server({{"llamacpp_backend", "cpu"}, {"ctx_size", 512}, {"parallel", 2}},
                  ModelType::kEmbedding);
  EXPECT_EQ(value_of(args_of(s), "--ctx-size"), "16384");
  EXPECT_EQ(s.slots().ctx_size, 8192);
}

TEST_F(LlamaCppArgs, SlotFlagsInUserArgsPointToTheParallelOption) {
  auto s = server({{"llamacpp_backend", "cpu"}, {"llamacpp_args", "--parallel 8"}});
  auto r = s.build_args(kPort);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidUserArgs);
  EXPECT_NE(r.error().detail().find("'parallel' option"), std::string::npos) << r.error().detail();
}

TEST_F(LlamaCppArgs, VulkanLlmCommandLine) {
  auto s = server({{"llamacpp_backend", "vulkan"}, {"ctx_size", 4096}});
  EXPECT_EQ(args_of(s), (Args{"-m", kGguf, "--ctx-size", "4096", "--parallel", "1", "--port",
                              "8123", "--host", "127.0.0.1", "--jinja", "--context-shift", "--keep",
                              "16", "--reasoning-format", "auto", "--no-webui", "-ngl", "99"}));
}

TEST_F(LlamaCppArgs, RocmGetsContextShiftAndAllGpuLayers) {
  Args a = args_of(server({{"llamacpp_backend", "rocm"}}));
  EXPECT_EQ(count(a, "--context-shift"), 1);
  EXPECT_EQ(value_of(a, "-ngl"), "99");
}

TEST_F(LlamaCppArgs, CpuHasNoContextShiftAndNoGpuLayers) {
  Args a = args_of(server({{"llamacpp_backend", "cpu"}}));
  EXPECT_EQ(count(a, "--context-shift"), 0);
  EXPECT_EQ(value_of(a, "-ngl"), "0");
}

TEST_F(LlamaCppArgs, MetalIsGpuButHasNoContextShift) {
  Args a = args_of(server({{"llamacpp_backend", "metal"}}));
  EXPECT_EQ(count(a, "--context-shift"), 0);
  EXPECT_EQ(value_of(a, "-ngl"), "99");
}

TEST_F(LlamaCppArgs, PortIsTheOneGiven) {
  auto s = server({{"llamacpp_backend", "cpu"}});
  EXPECT_EQ(value_of(args_of(s, 8001), "--port"), "8001");
  EXPECT_EQ(value_of(args_of(s, 31999), "--port"), "31999");
  EXPECT_EQ(value_of(args_of(s), "--host"), "127.0.0.1");
}

TEST_F(LlamaCppArgs, DefaultContextIs4096) {
  Args a = args_of(server({{"llamacpp_backend", "cpu"}}));
  EXPECT_EQ(value_of(a, "--ctx-size"), "4096");
}

// ---- model types ------------------------------------------------------------------

TEST_F(LlamaCppArgs, EmbeddingModelGetsEmbeddingsAndAtLeast8192Context) {
  Args a =
      args_of(server({{"llamacpp_backend", "cpu"}, {"ctx_size", 4096}}, ModelType::kEmbedding));
  EXPECT_EQ(a, (Args{"-m", kGguf, "--ctx-size", "8192", "--parallel", "1", "--port", "8123",
                     "--host", "127.0.0.1", "--jinja", "--keep", "16", "--reasoning-format", "auto",
                     "--no-webui", "--embeddings", "-ngl", "0"}));
  EXPECT_EQ(count(a, "--reranking"), 0);
}

TEST_F(LlamaCppArgs, EmbeddingModelKeepsALargerContext) {
  Args a =
      args_of(server({{"llamacpp_backend", "cpu"}, {"ctx_size", 16384}}, ModelType::kEmbedding));
  EXPECT_EQ(value_of(a, "--ctx-size"), "16384");
}

TEST_F(LlamaCppArgs, RerankingModelGetsRerankingAndItsOwnContext) {
  Args a =
      args_of(server({{"llamacpp_backend", "vulkan"}, {"ctx_size", 2048}}, ModelType::kReranking));
  EXPECT_EQ(count(a, "--reranking"), 1);
  EXPECT_EQ(count(a, "--embeddings"), 0);
  EXPECT_EQ(value_of(a, "--ctx-size"), "2048");
  // --reranking comes right before -ngl.
  auto it = std::find(a.begin(), a.end(), "--reranking");
  ASSERT_NE(it, a.end());
  ASSERT_NE(it + 1, a.end());
  EXPECT_EQ(*(it + 1), "-ngl");
}

TEST_F(LlamaCppArgs, LlmModelHasNeitherEmbeddingsNorReranking) {
  Args a = args_of(server({{"llamacpp_backend", "cpu"}, {"ctx_size", 2048}}));
  EXPECT_EQ(count(a, "--embeddings"), 0);
  EXPECT_EQ(count(a, "--reranking"), 0);
  EXPECT_EQ(value_of(a, "--ctx-size"), "2048");  // no embedding minimum for LLMs
}

// ---- mmproj ---------------------------------------------------------------------------

TEST_F(LlamaCppArgs, MmprojOnCpuIsNotOffloaded) {
  Args a = args_of(server({{"llamacpp_backend", "cpu"}}, ModelType::kLlm, true));
  EXPECT_EQ(a, (Args{"-m",
                     kGguf,
                     "--ctx-size",
                     "4096",
                     "--parallel",
                     "1",
                     "--port",
                     "8123",
                     "--host",
                     "127.0.0.1",
                     "--jinja",
                     "--mmproj",
                     kMmproj,
                     "--no-mmproj-offload",
                     "--keep",
                     "16",
                     "--reasoning-format",
                     "auto",
                     "--no-webui",
                     "-ngl",
                     "0"}));
}

TEST_F(LlamaCppArgs, MmprojOnVulkanIsOffloaded) {
  Args a = args_of(server({{"llamacpp_backend", "vulkan"}}, ModelType::kLlm, true));
  EXPECT_EQ(value_of(a, "--mmproj"), kMmproj);
  EXPECT_EQ(count(a, "--no-mmproj-offload"), 0);
}

TEST_F(LlamaCppArgs, NoMmprojFlagsWithoutMmproj) {
  Args a = args_of(server({{"llamacpp_backend", "cpu"}}));
  EXPECT_EQ(count(a, "--mmproj"), 0);
  EXPECT_EQ(count(a, "--no-mmproj-offload"), 0);
}

// ---- user arguments -----------------------------------------------------------------------

TEST_F(LlamaCppArgs, UserArgsAreAppendedAtTheEnd) {
  Args a = args_of(server({{"llamacpp_backend", "cpu"}, {"llamacpp_args", "-t 2 --temp 0.5"}}));
  ASSERT_GE(a.size(), 4u);
  EXPECT_EQ(Args(a.end() - 4, a.end()), (Args{"-t", "2", "--temp", "0.5"}));
  EXPECT_EQ(Args(a.end() - 6, a.end() - 4), (Args{"-ngl", "0"}));
}

TEST_F(LlamaCppArgs, QuotedUserArgsStayOneArgument) {
  Args a = args_of(
      server({{"llamacpp_backend", "cpu"}, {"llamacpp_args", R"(--alias "my model" --seed -1)"}}));
  ASSERT_GE(a.size(), 4u);
  EXPECT_EQ(Args(a.end() - 4, a.end()), (Args{"--alias", "my model", "--seed", "-1"}));
}

TEST_F(LlamaCppArgs, UnterminatedQuoteInUserArgsIsRefused) {
  auto r =
      server({{"llamacpp_backend", "cpu"}, {"llamacpp_args", "--alias 'oops"}}).build_args(kPort);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidUserArgs);
  EXPECT_EQ(r.error().param(), "llamacpp_args");
}

TEST_F(LlamaCppArgs, UserKeepReplacesDefaultKeep) {
  Args a = args_of(server({{"llamacpp_backend", "cpu"}, {"llamacpp_args", "--keep 4"}}));
  EXPECT_EQ(count(a, "--keep"), 1);
  EXPECT_EQ(count(a, "16"), 0);
  EXPECT_EQ(Args(a.end() - 2, a.end()), (Args{"--keep", "4"}));
}

TEST_F(LlamaCppArgs, UserKeepWithEqualsReplacesDefaultKeep) {
  Args a = args_of(server({{"llamacpp_backend", "cpu"}, {"llamacpp_args", "--keep=4"}}));
  EXPECT_EQ(count(a, "--keep"), 0);
  EXPECT_EQ(count(a, "16"), 0);
  EXPECT_EQ(a.back(), "--keep=4");
}

TEST_F(LlamaCppArgs, LongerFlagSharingAPrefixDoesNotDropDefault) {
  Args a = args_of(server({{"llamacpp_backend", "cpu"}, {"llamacpp_args", "--keep-foo 1"}}));
  EXPECT_EQ(value_of(a, "--keep"), "16");
  EXPECT_EQ(Args(a.end() - 2, a.end()), (Args{"--keep-foo", "1"}));
}

TEST_F(LlamaCppArgs, UserNoWebuiOrWebuiReplacesDefaultNoWebui) {
  Args a = args_of(server({{"llamacpp_backend", "cpu"}, {"llamacpp_args", "--no-webui"}}));
  EXPECT_EQ(count(a, "--no-webui"), 1);
  EXPECT_EQ(a.back(), "--no-webui");

  Args b = args_of(server({{"llamacpp_backend", "cpu"}, {"llamacpp_args", "--webui"}}));
  EXPECT_EQ(count(b, "--no-webui"), 0);
  EXPECT_EQ(b.back(), "--webui");
}

TEST_F(LlamaCppArgs, UserJinjaOrNoJinjaReplacesDefaultJinja) {
  Args a = args_of(server({{"llamacpp_backend", "cpu"}, {"llamacpp_args", "--no-jinja"}}));
  EXPECT_EQ(count(a, "--jinja"), 0);
  EXPECT_EQ(a.back(), "--no-jinja");

  Args b = args_of(server({{"llamacpp_backend", "cpu"}, {"llamacpp_args", "--jinja"}}));
  EXPECT_EQ(count(b, "--jinja"), 1);
  EXPECT_EQ(b.back(), "--jinja");
}

TEST_F(LlamaCppArgs, UserReasoningFormatReplacesDefault) {
  Args a =
      args_of(server({{"llamacpp_backend", "cpu"}, {"llamacpp_args", "--reasoning-format none"}}));
  EXPECT_EQ(count(a, "--reasoning-format"), 1);
  EXPECT_EQ(count(a, "auto"), 0);
  EXPECT_EQ(Args(a.end() - 2, a.end()), (Args{"--reasoning-format", "none"}));
}

TEST_F(LlamaCppArgs, UserNoContextShiftReplacesDefaultOnVulkan) {
  Args a =
      args_of(server({{"llamacpp_backend", "vulkan"}, {"llamacpp_args", "--no-context-shift"}}));
  EXPECT_EQ(count(a, "--context-shift"), 0);
  EXPECT_EQ(a.back(), "--no-context-shift");
}

TEST_F(LlamaCppArgs, UserContextShiftOnVulkanIsNotDuplicated) {
  Args a = args_of(server({{"llamacpp_backend", "vulkan"}, {"llamacpp_args", "--context-shift"}}));
  EXPECT_EQ(count(a, "--context-shift"), 1);
  EXPECT_EQ(a.back(), "--context-shift");
}

TEST_F(LlamaCppArgs, UnrelatedUserFlagsKeepEveryDefault) {
  Args a = args_of(server({{"llamacpp_backend", "vulkan"}, {"llamacpp_args", "-t 2 --no-mmap"}}));
  EXPECT_EQ(count(a, "--jinja"), 1);
  EXPECT_EQ(count(a, "--context-shift"), 1);
  EXPECT_EQ(value_of(a, "--keep"), "16");
  EXPECT_EQ(value_of(a, "--reasoning-format"), "auto");
  EXPECT_EQ(count(a, "--no-webui"), 1);
}

// ---- reserved flags: one case per family --------------------------------------------------

struct ReservedCase {
  const char* family;
  const char* user_args;
  const char* flag;  // the flag the error must name
};

class LlamaCppReserved : public LlamaCppArgs, public ::testing::WithParamInterface<ReservedCase> {};

TEST_P(LlamaCppReserved, IsRefusedNamingTheFlag) {
  const ReservedCase& c = GetParam();
  auto s = server({{"llamacpp_backend", "cpu"}, {"llamacpp_args", c.user_args}});
  auto r = s.build_args(kPort);
  ASSERT_FALSE(r.ok()) << c.user_args;
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidUserArgs);
  EXPECT_EQ(r.error().param(), "llamacpp_args");
  EXPECT_NE(r.error().message().find(std::string("'") + c.flag + "'"), std::string::npos)
      << r.error().message();
}

INSTANTIATE_TEST_SUITE_P(
    Families, LlamaCppReserved,
    ::testing::Values(ReservedCase{"model_short", "-m other.gguf", "-m"},
                      ReservedCase{"model_long", "--threads 2 --model other.gguf", "--model"},
                      ReservedCase{"parallel_short", "-np 2", "-np"},
                      ReservedCase{"parallel_long", "--parallel=2", "--parallel"},
                      ReservedCase{"kv_unified", "-kvu", "-kvu"},
                      ReservedCase{"kv_unified_long", "--kv-unified", "--kv-unified"},
                      ReservedCase{"port", "--port 9000", "--port"},
                      ReservedCase{"port_equals", "--port=9", "--port"},
                      ReservedCase{"host", "--host 0.0.0.0", "--host"},
                      ReservedCase{"ctx_short", "-c 8192", "-c"},
                      ReservedCase{"ctx_long", "--ctx-size 8192", "--ctx-size"},
                      ReservedCase{"embeddings", "--embeddings", "--embeddings"},
                      ReservedCase{"embedding", "--embedding", "--embedding"},
                      ReservedCase{"reranking", "--reranking", "--reranking"},
                      ReservedCase{"rerank", "--rerank", "--rerank"},
                      ReservedCase{"mmproj", "--mmproj x.gguf", "--mmproj"},
                      ReservedCase{"mmproj_mm", "-mm x.gguf", "-mm"},
                      ReservedCase{"mmproj_url", "--mmproj-url http://x", "--mmproj-url"},
                      ReservedCase{"no_mmproj", "--no-mmproj", "--no-mmproj"},
                      ReservedCase{"mmproj_offload", "--no-mmproj-offload", "--no-mmproj-offload"},
                      ReservedCase{"gpu_layers_short", "-ngl 10", "-ngl"},
                      ReservedCase{"gpu_layers_long", "--gpu-layers 10", "--gpu-layers"},
                      ReservedCase{"n_gpu_layers", "--n-gpu-layers=10", "--n-gpu-layers"},
                      ReservedCase{"api_key", "--api-key secret", "--api-key"},
                      ReservedCase{"api_key_file", "--api-key-file /k", "--api-key-file"}),
    [](const ::testing::TestParamInfo<ReservedCase>& p) { return p.param.family; });

TEST_F(LlamaCppArgs, ReservedListCoversEveryFamily) {
  const auto& reserved = LlamaCppServer::reserved_flags();
  for (const char* flag : {"-m",
                           "--model",
                           "--port",
                           "--host",
                           "-c",
                           "--ctx-size",
                           "--embeddings",
                           "--embedding",
                           "--reranking",
                           "--rerank",
                           "--mmproj",
                           "-mm",
                           "-mmu",
                           "--mmproj-url",
                           "--no-mmproj",
                           "--mmproj-auto",
                           "--no-mmproj-auto",
                           "--mmproj-offload",
                           "--no-mmproj-offload",
                           "-ngl",
                           "--gpu-layers",
                           "--n-gpu-layers",
                           "--api-key",
                           "--api-key-file"}) {
    EXPECT_NE(std::find(reserved.begin(), reserved.end(), flag), reserved.end()) << flag;
  }
  // Overridable defaults must not be reserved.
  for (const char* flag : {"--keep", "--jinja", "--no-jinja", "--no-webui", "--webui",
                           "--reasoning-format", "--context-shift", "--no-context-shift"}) {
    EXPECT_EQ(std::find(reserved.begin(), reserved.end(), flag), reserved.end()) << flag;
  }
}

TEST_F(LlamaCppArgs, NegativeNumberValuesAreNotFlags) {
  Args a = args_of(server({{"llamacpp_backend", "cpu"}, {"llamacpp_args", "--seed -1"}}));
  EXPECT_EQ(Args(a.end() - 2, a.end()), (Args{"--seed", "-1"}));
}

// ---- routes and device --------------------------------------------------------------------

TEST_F(LlamaCppArgs, UpstreamPathPerRoute) {
  auto s = server({{"llamacpp_backend", "cpu"}});
  EXPECT_EQ(s.upstream_path(ApiRoute::kChatCompletions), "/v1/chat/completions");
  EXPECT_EQ(s.upstream_path(ApiRoute::kCompletions), "/v1/completions");
  EXPECT_EQ(s.upstream_path(ApiRoute::kResponses), "/v1/responses");
  EXPECT_EQ(s.upstream_path(ApiRoute::kEmbeddings), "/v1/embeddings");
  EXPECT_EQ(s.upstream_path(ApiRoute::kReranking), "/v1/rerank");
  EXPECT_EQ(s.upstream_path(ApiRoute::kTranscriptions), std::nullopt);
  EXPECT_EQ(s.upstream_path(ApiRoute::kImageGenerations), std::nullopt);
}

TEST_F(LlamaCppArgs, DevicePerBackend) {
  EXPECT_EQ(server({{"llamacpp_backend", "cpu"}}).device(), Device::kCpu);
  EXPECT_EQ(server({{"llamacpp_backend", "vulkan"}}).device(), Device::kGpu);
  EXPECT_EQ(server({{"llamacpp_backend", "rocm"}}).device(), Device::kGpu);
  EXPECT_EQ(server({{"llamacpp_backend", "metal"}}).device(), Device::kGpu);
}

// With no llamacpp_backend option the server runs the CPU build with -ngl 0
// (backend() treats "" as "cpu"), so the device it reports for slot
// accounting must be the CPU as well.
TEST_F(LlamaCppArgs, DeviceAgreesWithCommandLineWhenBackendUnset) {
  auto s = server(json::object());
  Args a = args_of(s);
  ASSERT_EQ(value_of(a, "-ngl"), "0");  // runs on the CPU...
  EXPECT_EQ(s.device(), Device::kCpu)   // ...so it must not claim the GPU
      << "device() reports " << device_name(s.device());
}

TEST_F(LlamaCppArgs, ServerKeepsModelOptionsAndType) {
  auto s = server({{"llamacpp_backend", "cpu"}, {"ctx_size", 1234}}, ModelType::kEmbedding);
  EXPECT_EQ(s.model_name(), "Test-Model-GGUF");
  EXPECT_EQ(s.type(), ModelType::kEmbedding);
  EXPECT_EQ(s.options().ctx_size(), 1234);
  EXPECT_EQ(s.pid(), std::nullopt);
  EXPECT_TRUE(s.exited());
}

}  // namespace
}  // namespace lemon
