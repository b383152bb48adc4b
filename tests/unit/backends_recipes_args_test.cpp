// The other recipes' WrappedServers (as Lemonade 9.4.1 starts them): command
// lines, routes, body rewriting, devices, which binary each one looks for, and
// the production factory that picks the class per recipe.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lemon/backends/flm_server.h"
#include "lemon/backends/llamacpp_server.h"
#include "lemon/backends/ryzenai_server.h"
#include "lemon/backends/sd_server.h"
#include "lemon/backends/server_factory.h"
#include "lemon/backends/whisper_server.h"
#include "support/scoped_env.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

namespace fs = std::filesystem;
using Args = std::vector<std::string>;
using nlohmann::json;
using testing::ScopedEnv;
using testing::TempDir;

constexpr int kRecipePort = 8123;

ModelInfo make_model(const std::string& recipe, std::map<std::string, std::string> checkpoints,
                     std::map<std::string, std::string> resolved,
                     ModelType type = ModelType::kLlm) {
  ModelInfo info;
  info.name = "test-" + recipe;
  info.recipe = recipe;
  info.type = type;
  info.checkpoints = std::move(checkpoints);
  info.resolved_paths = std::move(resolved);
  info.downloaded = true;
  return info;
}

RecipeOptions opts(const std::string& recipe, const json& j) {
  auto r = RecipeOptions::from_json(recipe, j);
  EXPECT_TRUE(r.ok()) << recipe << " " << j.dump();
  return r.ok() ? *r : RecipeOptions{};
}

Args args_of(const ProcessServer& s, int port = kRecipePort) {
  auto r = s.build_args(port);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? *r : Args{};
}

class RecipeArgs : public ::testing::Test {
 protected:
  BackendEnvironment env_;
};

// ---- FLM ---------------------------------------------------------------------------

ModelInfo flm_model() {
  return make_model("flm", {{"main", "llama3.2:1b"}}, {{"main", "llama3.2:1b"}});
}

TEST_F(RecipeArgs, FlmCommandLine) {
  FlmServer s(flm_model(), opts("flm", {{"ctx_size", 8192}}), env_);
  EXPECT_EQ(args_of(s), (Args{"serve", "llama3.2:1b", "--ctx-len", "8192", "--port", "8123",
                              "--host", "127.0.0.1", "--cors", "0", "--quiet"}));
}

TEST_F(RecipeArgs, FlmRewritesModelToCheckpointAndKeepsTheRest) {
  FlmServer s(flm_model(), opts("flm", {{"ctx_size", 4096}}), env_);
  json body = {{"model", "Llama-3.2-1B-FLM"},
               {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
               {"stream", true}};
  auto rewritten = s.rewrite_body(ApiRoute::kChatCompletions, body);
  ASSERT_TRUE(rewritten.has_value());
  json out = json::parse(*rewritten);
  EXPECT_EQ(out["model"], "llama3.2:1b");
  EXPECT_EQ(out["messages"], body["messages"]);
  EXPECT_EQ(out["stream"], true);
  EXPECT_EQ(out.size(), body.size());

  // A body without "model" gets one too.
  auto added = s.rewrite_body(ApiRoute::kCompletions, json{{"prompt", "x"}});
  ASSERT_TRUE(added.has_value());
  EXPECT_EQ(json::parse(*added)["model"], "llama3.2:1b");

  // Not an object: nothing to rewrite.
  EXPECT_EQ(s.rewrite_body(ApiRoute::kChatCompletions, json::array({1, 2})), std::nullopt);
}

TEST_F(RecipeArgs, FlmRoutesHaveNoResponsesApi) {
  FlmServer s(flm_model(), opts("flm", {}), env_);
  EXPECT_EQ(s.upstream_path(ApiRoute::kChatCompletions), "/v1/chat/completions");
  EXPECT_EQ(s.upstream_path(ApiRoute::kCompletions), "/v1/completions");
  EXPECT_EQ(s.upstream_path(ApiRoute::kEmbeddings), "/v1/embeddings");
  EXPECT_EQ(s.upstream_path(ApiRoute::kResponses), std::nullopt);
  EXPECT_EQ(s.upstream_path(ApiRoute::kReranking), std::nullopt);
  EXPECT_EQ(s.upstream_path(ApiRoute::kTranscriptions), std::nullopt);
  EXPECT_EQ(s.upstream_path(ApiRoute::kImageGenerations), std::nullopt);
}

TEST_F(RecipeArgs, FlmRunsOnTheNpu) {
  FlmServer s(flm_model(), opts("flm", {}), env_);
  EXPECT_EQ(s.device(), Device::kNpu);
}

// ---- Ryzen AI ------------------------------------------------------------------------------

ModelInfo ryzen_model(const std::string& recipe) {
  return make_model(recipe, {{"main", "amd/Phi-3-mini-onnx-ryzenai-npu"}},
                    {{"main", "/hub/models--amd--Phi-3/snapshots/abc"}});
}

TEST_F(RecipeArgs, RyzenAiCommandLine) {
  RyzenAiServer s(ryzen_model("ryzenai-llm"), opts("ryzenai-llm", {{"ctx_size", 3072}}), env_);
  EXPECT_EQ(args_of(s), (Args{"-m", "/hub/models--amd--Phi-3/snapshots/abc", "--port", "8123",
                              "--host", "127.0.0.1", "--ctx-size", "3072"}));
}

TEST_F(RecipeArgs, RyzenAiDefaultContextAndVerbose) {
  BackendEnvironment verbose_env;
  verbose_env.verbose = true;
  RyzenAiServer s(ryzen_model("ryzenai-llm"), opts("ryzenai-llm", {}), verbose_env);
  EXPECT_EQ(args_of(s), (Args{"-m", "/hub/models--amd--Phi-3/snapshots/abc", "--port", "8123",
                              "--host", "127.0.0.1", "--ctx-size", "4096", "--verbose"}));
}

TEST_F(RecipeArgs, RyzenAiDevicePerRecipe) {
  EXPECT_EQ(RyzenAiServer(ryzen_model("ryzenai-llm"), {}, env_).device(), Device::kNpu);
  EXPECT_EQ(RyzenAiServer(ryzen_model("oga-npu"), {}, env_).device(), Device::kNpu);
  EXPECT_EQ(RyzenAiServer(ryzen_model("oga-hybrid"), {}, env_).device(),
            Device::kGpu | Device::kNpu);
  EXPECT_EQ(RyzenAiServer(ryzen_model("oga-cpu"), {}, env_).device(), Device::kCpu);
}

TEST_F(RecipeArgs, RyzenAiRoutes) {
  RyzenAiServer s(ryzen_model("ryzenai-llm"), {}, env_);
  EXPECT_EQ(s.upstream_path(ApiRoute::kChatCompletions), "/v1/chat/completions");
  EXPECT_EQ(s.upstream_path(ApiRoute::kCompletions), "/v1/completions");
  EXPECT_EQ(s.upstream_path(ApiRoute::kResponses), std::nullopt);
  EXPECT_EQ(s.upstream_path(ApiRoute::kEmbeddings), std::nullopt);
  EXPECT_EQ(s.upstream_path(ApiRoute::kImageGenerations), std::nullopt);
  EXPECT_EQ(s.rewrite_body(ApiRoute::kChatCompletions, json{{"model", "x"}}), std::nullopt);
}

// ---- whisper
// -------------------------------------------------------------------------------------

ModelInfo whisper_model() {
  return make_model("whispercpp", {{"main", "ggerganov/whisper.cpp:ggml-tiny.bin"}},
                    {{"main", "/hub/ggml-tiny.bin"}}, ModelType::kAudio);
}

// whisper-server has no API key: its routes go under a secret path (issue
// #24), 256 bits as hex, a new one for each server.
std::string request_path_of(const Args& args) {
  auto it = std::find(args.begin(), args.end(), "--request-path");
  return it == args.end() || it + 1 == args.end() ? std::string() : *(it + 1);
}

TEST_F(RecipeArgs, WhisperCommandLine) {
  WhisperServer s(whisper_model(), opts("whispercpp", {{"whispercpp_backend", "cpu"}}), env_);
  const Args args = args_of(s);
  const std::string secret_path = request_path_of(args);
  ASSERT_EQ(secret_path.size(), 65u) << "/ and 64 hex digits";
  EXPECT_EQ(secret_path[0], '/');
  EXPECT_EQ(secret_path.find_first_not_of("0123456789abcdef", 1), std::string::npos);
  EXPECT_EQ(args, (Args{"-m", "/hub/ggml-tiny.bin", "--port", "8123", "--host", "127.0.0.1",
                        "--request-path", secret_path}));
  WhisperServer other(whisper_model(), opts("whispercpp", {}), env_);
  EXPECT_NE(request_path_of(args_of(other)), secret_path);
}

TEST_F(RecipeArgs, WhisperServesOnlyTranscriptionsAtInference) {
  WhisperServer s(whisper_model(), opts("whispercpp", {}), env_);
  EXPECT_EQ(s.upstream_path(ApiRoute::kTranscriptions), request_path_of(args_of(s)) + "/inference");
  EXPECT_EQ(s.upstream_path(ApiRoute::kChatCompletions), std::nullopt);
  EXPECT_EQ(s.upstream_path(ApiRoute::kEmbeddings), std::nullopt);
  EXPECT_EQ(s.upstream_path(ApiRoute::kImageGenerations), std::nullopt);
}

TEST_F(RecipeArgs, WhisperDevicePerBackend) {
  EXPECT_EQ(
      WhisperServer(whisper_model(), opts("whispercpp", {{"whispercpp_backend", "cpu"}}), env_)
          .device(),
      Device::kCpu);
  EXPECT_EQ(
      WhisperServer(whisper_model(), opts("whispercpp", {{"whispercpp_backend", "npu"}}), env_)
          .device(),
      Device::kNpu);
  EXPECT_EQ(
      WhisperServer(whisper_model(), opts("whispercpp", {{"whispercpp_backend", "vulkan"}}), env_)
          .device(),
      Device::kGpu);
  // Unset means the CPU build.
  EXPECT_EQ(WhisperServer(whisper_model(), opts("whispercpp", {}), env_).device(), Device::kCpu);
}

// ---- stable-diffusion.cpp
// ------------------------------------------------------------------------

TEST_F(RecipeArgs, SdSingleFileCommandLine) {
  auto m = make_model("sd-cpp", {{"main", "stabilityai/sd-turbo:sd_turbo.safetensors"}},
                      {{"main", "/hub/sd_turbo.safetensors"}}, ModelType::kImage);
  SdServer s(m, opts("sd-cpp", {}), env_);
  EXPECT_EQ(args_of(s), (Args{"--listen-ip", "127.0.0.1", "--listen-port", "8123", "-m",
                              "/hub/sd_turbo.safetensors"}));
}

TEST_F(RecipeArgs, SdSplitModelWithTextEncoderAndVae) {
  auto m = make_model("sd-cpp",
                      {{"main", "org/flux:diffusion.gguf"},
                       {"text_encoder", "org/flux:te.gguf"},
                       {"vae", "org/flux:ae.safetensors"}},
                      {{"main", "/hub/diffusion.gguf"},
                       {"text_encoder", "/hub/te.gguf"},
                       {"vae", "/hub/ae.safetensors"}},
                      ModelType::kImage);
  SdServer s(m, opts("sd-cpp", {}), env_);
  EXPECT_EQ(args_of(s),
            (Args{"--listen-ip", "127.0.0.1", "--listen-port", "8123", "--diffusion-model",
                  "/hub/diffusion.gguf", "--llm", "/hub/te.gguf", "--vae", "/hub/ae.safetensors"}));
}

TEST_F(RecipeArgs, SdSplitModelWithLlmRole) {
  auto m = make_model(
      "sd-cpp",
      {{"main", "org/q:d.gguf"}, {"llm", "org/q:llm.gguf"}, {"vae", "org/q:vae.safetensors"}},
      {{"main", "/hub/d.gguf"}, {"llm", "/hub/llm.gguf"}, {"vae", "/hub/vae.safetensors"}},
      ModelType::kImage);
  BackendEnvironment verbose_env;
  verbose_env.verbose = true;
  SdServer s(m, opts("sd-cpp", {}), verbose_env);
  EXPECT_EQ(args_of(s),
            (Args{"--listen-ip", "127.0.0.1", "--listen-port", "8123", "--diffusion-model",
                  "/hub/d.gguf", "--llm", "/hub/llm.gguf", "--vae", "/hub/vae.safetensors", "-v"}));
}

TEST_F(RecipeArgs, SdRouteAndDevice) {
  auto m = make_model("sd-cpp", {{"main", "a:b"}}, {{"main", "/hub/b"}}, ModelType::kImage);
  SdServer cpu(m, opts("sd-cpp", {{"sd-cpp_backend", "cpu"}}), env_);
  SdServer rocm(m, opts("sd-cpp", {{"sd-cpp_backend", "rocm"}}), env_);
  EXPECT_EQ(cpu.device(), Device::kCpu);
  EXPECT_EQ(rocm.device(), Device::kGpu);
  EXPECT_EQ(cpu.upstream_path(ApiRoute::kImageGenerations), "/v1/images/generations");
  EXPECT_EQ(cpu.upstream_path(ApiRoute::kChatCompletions), std::nullopt);
  EXPECT_EQ(cpu.upstream_path(ApiRoute::kTranscriptions), std::nullopt);
}

TEST_F(RecipeArgs, SdEditFormPassesTheImagesOnUncopied) {
  auto m = make_model("sd-cpp", {{"main", "a:b"}}, {{"main", "/hub/b"}}, ModelType::kImage);
  SdServer s(m, opts("sd-cpp", {{"width", 256}, {"height", 128}}), env_);
  const std::string image = "\x89PNG" + std::string(2048, 'p');
  const std::string mask = "\x89PNG" + std::string(1024, 'm');
  const std::vector<FormField> form = {{"model", "", "", "m"},
                                       {"prompt", "", "", "make it blue"},
                                       {"n", "", "", "2"},
                                       {"image", "in.png", "image/png", image},
                                       {"mask", "", "", mask}};
  auto sent = s.rewrite_form(ApiRoute::kImageEdits, form);
  ASSERT_TRUE(sent.has_value());
  std::map<std::string, const FormField*> by_name;
  for (const auto& f : *sent) {
    by_name[f.name] = &f;
  }
  ASSERT_EQ(by_name.size(), 5u);  // prompt, n, size, image[], mask
  EXPECT_EQ(by_name["prompt"]->data.rfind("make it blue <sd_cpp_extra_args>", 0), 0u);
  EXPECT_EQ(by_name["n"]->data, "2");
  EXPECT_EQ(by_name["size"]->data, "256x128");
  EXPECT_EQ(by_name["image[]"]->data.data(), image.data());
  EXPECT_EQ(by_name["image[]"]->filename, "in.png");
  EXPECT_EQ(by_name["mask"]->data.data(), mask.data());
  EXPECT_EQ(by_name["mask"]->filename, "mask.png");
}

// ---- which binary each recipe looks for --------------------------------------------------------
//
// binary_query() is protected; prepare() reports the LEMONADE_*_BIN variable
// it consulted when that variable points nowhere.

class RecipeBinaryQuery : public ::testing::Test {
 protected:
  void SetUp() override { env_.cache_dir = (dir_.path() / "cache").string(); }
  // prepare() with `var` pointing at a missing file must name `var`.
  void expect_consults(WrappedServer& s, const std::string& var) {
    vars_.set(var, (dir_.path() / "no-such-binary").string());
    auto st = s.prepare();
    ASSERT_FALSE(st.ok()) << var;
    EXPECT_EQ(st.error().code(), ErrorCode::kBackendBinaryMissing) << st.error().message();
    EXPECT_NE(st.error().message().find(var), std::string::npos) << st.error().message();
  }
  ModelInfo model(const std::string& recipe, ModelType type = ModelType::kLlm) const {
    return make_model(recipe, {{"main", "org/repo:file"}}, {{"main", model_file_.string()}}, type);
  }

  TempDir dir_{"lemon-recipe-bin"};
  const fs::path model_file_ = dir_.write("model.bin");
  BackendEnvironment env_;
  ScopedEnv vars_;
};

TEST_F(RecipeBinaryQuery, LlamaCppUsesItsBackend) {
  LlamaCppServer cpu(model("llamacpp"), opts("llamacpp", {{"llamacpp_backend", "cpu"}}), env_);
  expect_consults(cpu, "LEMONADE_LLAMACPP_CPU_BIN");
  LlamaCppServer vk(model("llamacpp"), opts("llamacpp", {{"llamacpp_backend", "vulkan"}}), env_);
  expect_consults(vk, "LEMONADE_LLAMACPP_VULKAN_BIN");
}

TEST_F(RecipeBinaryQuery, FlmHasNoBackend) {
  FlmServer s(flm_model(), opts("flm", {}), env_);
  expect_consults(s, "LEMONADE_FLM_BIN");
}

TEST_F(RecipeBinaryQuery, RyzenAiUsesNpu) {
  RyzenAiServer s(model("ryzenai-llm"), opts("ryzenai-llm", {}), env_);
  expect_consults(s, "LEMONADE_RYZENAILLM_NPU_BIN");
}

TEST_F(RecipeBinaryQuery, WhisperUsesItsBackend) {
  WhisperServer s(model("whispercpp", ModelType::kAudio),
                  opts("whispercpp", {{"whispercpp_backend", "npu"}}), env_);
  expect_consults(s, "LEMONADE_WHISPERCPP_NPU_BIN");
}

TEST_F(RecipeBinaryQuery, SdUsesItsBackend) {
  SdServer s(model("sd-cpp", ModelType::kImage), opts("sd-cpp", {{"sd-cpp_backend", "rocm"}}),
             env_);
  expect_consults(s, "LEMONADE_SDCPP_ROCM_BIN");
}

// ---- RecipeServerFactory ---------------------------------------------------------------------

template <typename T>
bool created_as(RecipeServerFactory& f, const std::string& recipe) {
  auto m = make_model(recipe, {{"main", "org/repo:file"}}, {{"main", "/hub/file"}});
  auto r = f.create(m, RecipeOptions{});
  EXPECT_TRUE(r.ok()) << recipe;
  if (!r.ok()) {
    return false;
  }
  EXPECT_EQ((*r)->model_name(), m.name);
  return dynamic_cast<T*>(r->get()) != nullptr;
}

TEST_F(RecipeArgs, FactoryPicksTheClassPerRecipe) {
  RecipeServerFactory f(env_);
  EXPECT_TRUE(created_as<LlamaCppServer>(f, "llamacpp"));
  EXPECT_TRUE(created_as<FlmServer>(f, "flm"));
  EXPECT_TRUE(created_as<RyzenAiServer>(f, "ryzenai-llm"));
  EXPECT_TRUE(created_as<RyzenAiServer>(f, "oga-npu"));
  EXPECT_TRUE(created_as<RyzenAiServer>(f, "oga-hybrid"));
  EXPECT_TRUE(created_as<RyzenAiServer>(f, "oga-cpu"));
  EXPECT_TRUE(created_as<WhisperServer>(f, "whispercpp"));
  EXPECT_TRUE(created_as<SdServer>(f, "sd-cpp"));
  EXPECT_FALSE(created_as<LlamaCppServer>(f, "flm"));
}

TEST_F(RecipeArgs, FactoryPassesOptionsThrough) {
  RecipeServerFactory f(env_);
  auto m = make_model("llamacpp", {{"main", "org/repo:file"}}, {{"main", "/hub/file.gguf"}});
  auto r = f.create(m, opts("llamacpp", {{"ctx_size", 777}, {"llamacpp_backend", "vulkan"}}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->options().ctx_size(), 777);
  EXPECT_EQ((*r)->device(), Device::kGpu);
}

TEST_F(RecipeArgs, FactoryRefusesUnknownRecipe) {
  RecipeServerFactory f(env_);
  for (const char* recipe : {"kokoro", "", "oga", "llama.cpp"}) {
    auto m = make_model(recipe, {{"main", "x"}}, {});
    auto r = f.create(m, RecipeOptions{});
    ASSERT_FALSE(r.ok()) << recipe;
    EXPECT_EQ(r.error().code(), ErrorCode::kUnknownRecipe) << recipe;
    EXPECT_EQ(r.error().param(), "model");
    EXPECT_NE(r.error().message().find("'" + std::string(recipe) + "'"), std::string::npos)
        << r.error().message();
  }
}

TEST(BackendFor, PerRecipe) {
  EXPECT_EQ(backend_for("llamacpp", opts("llamacpp", {{"llamacpp_backend", "rocm"}})), "rocm");
  EXPECT_EQ(backend_for("llamacpp", opts("llamacpp", {})), "");
  EXPECT_EQ(backend_for("whispercpp", opts("whispercpp", {{"whispercpp_backend", "npu"}})), "npu");
  EXPECT_EQ(backend_for("sd-cpp", opts("sd-cpp", {{"sd-cpp_backend", "rocm"}})), "rocm");
  EXPECT_EQ(backend_for("ryzenai-llm", {}), "npu");
  EXPECT_EQ(backend_for("oga-hybrid", {}), "npu");
  EXPECT_EQ(backend_for("flm", {}), "");
  EXPECT_EQ(backend_for("unknown", {}), "");
}

}  // namespace
}  // namespace lemon
