#include "lemon/backends/llamacpp_server.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "lemon/backends/out_of_memory.h"
#include "lemon/backends/user_args.h"

namespace lemon {
namespace {

constexpr int kEmbeddingMinContext = 8192;

// An unset backend means the CPU build, for the command line and the device.
std::string llamacpp_backend(const RecipeOptions& options) {
  std::string b = options.string_value("llamacpp_backend");
  return b.empty() ? "cpu" : b;
}

}  // namespace

LlamaCppServer::LlamaCppServer(const ModelInfo& model, const RecipeOptions& options,
                               const BackendEnvironment& env)
    : ProcessServer(model, options, device_for_recipe("llamacpp", llamacpp_backend(options)), env) {
}

std::string LlamaCppServer::backend() const {
  return llamacpp_backend(options());
}

BinaryQuery LlamaCppServer::binary_query() const {
  return {"llamacpp", backend(), "llama-server"};
}

std::vector<std::string> LlamaCppServer::required_roles() const {
  std::vector<std::string> roles = {"main"};
  if (model().checkpoints.count("mmproj") != 0) {
    roles.emplace_back("mmproj");
  }
  return roles;
}

const std::vector<std::string>& LlamaCppServer::reserved_flags() {
  static const std::vector<std::string> kReserved = {"-m",
                                                     "--model",
                                                     "-mu",
                                                     "--model-url",
                                                     "-hf",
                                                     "--hf-repo",
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
                                                     "--api-key-file"};
  return kReserved;
}

RequestSlots LlamaCppServer::slots() const {
  int ctx = options().ctx_size();
  if (type() == ModelType::kEmbedding) {
    ctx = std::max(ctx, kEmbeddingMinContext);
  }
  return {options().int_value("parallel", 1), ctx};
}

Result<std::vector<std::string>> LlamaCppServer::build_args(int port) const {
  auto user = split_user_args(options().string_value("llamacpp_args"));
  if (!user.ok()) {
    return std::move(user).error();
  }
  if (auto reserved = check_reserved_flags(*user, reserved_flags()); !reserved.ok()) {
    return std::move(reserved).error();
  }
  // The slots are the router's to count (it never sends more requests than
  // slots), and a unified cache would share one context between them.
  static const std::vector<std::string> kSlotFlags = {
      "-np", "--parallel", "-kvu", "--kv-unified", "-no-kvu", "--no-kv-unified"};
  if (auto slots_flag = check_reserved_flags(*user, kSlotFlags); !slots_flag.ok()) {
    return std::move(slots_flag)
        .error()
        .with_detail(
            "Set the slots with the 'parallel' option instead (--parallel, LEMONADE_PARALLEL, "
            "/load or recipe_options.json): each of them gets ctx_size tokens of context.");
  }
  const std::string be = backend();
  const bool gpu = be != "cpu";
  // Each of the `parallel` slots gets ctx_size tokens: llama-server splits
  // --ctx-size evenly between --parallel slots unless the KV cache is unified
  // (which it is only when --parallel is left on auto). So a request never
  // fails for lack of context because others are running (issue #11 §6,
  // Lemonade #3276).
  const RequestSlots s = slots();
  const long long kv_tokens = static_cast<long long>(s.ctx_size) * s.total;
  std::vector<std::string> args = {"-m",         model().resolved_path("main"),
                                   "--ctx-size", std::to_string(kv_tokens),
                                   "--parallel", std::to_string(s.total),
                                   "--port",     std::to_string(port),
                                   "--host",     "127.0.0.1"};
  // Defaults the user may override by naming the flag (or its opposite).
  auto add_default = [&](const std::vector<std::string>& names,
                         const std::vector<std::string>& values) {
    if (!has_any_flag(*user, names)) {
      args.insert(args.end(), values.begin(), values.end());
    }
  };
  add_default({"--jinja", "--no-jinja"}, {"--jinja"});
  if (std::string mmproj = model().resolved_path("mmproj"); !mmproj.empty()) {
    args.insert(args.end(), {"--mmproj", mmproj});
    if (!gpu) {
      args.emplace_back("--no-mmproj-offload");
    }
  }
  if (be == "vulkan" || be == "rocm") {
    add_default({"--context-shift", "--no-context-shift"}, {"--context-shift"});
  }
  add_default({"--keep"}, {"--keep", "16"});
  add_default({"--reasoning-format"}, {"--reasoning-format", "auto"});
  add_default({"--no-webui", "--webui"}, {"--no-webui"});
  if (type() == ModelType::kEmbedding) {
    args.emplace_back("--embeddings");
  } else if (type() == ModelType::kReranking) {
    args.emplace_back("--reranking");
  }
  args.insert(args.end(), {"-ngl", gpu ? "99" : "0"});
  args.insert(args.end(), user->begin(), user->end());
  return args;
}

std::optional<std::string> LlamaCppServer::upstream_path(ApiRoute route) const {
  switch (route) {
    case ApiRoute::kChatCompletions:
      return "/v1/chat/completions";
    case ApiRoute::kCompletions:
      return "/v1/completions";
    case ApiRoute::kResponses:
      return "/v1/responses";
    case ApiRoute::kEmbeddings:
      return "/v1/embeddings";
    case ApiRoute::kReranking:
      return "/v1/rerank";
    case ApiRoute::kTokenize:
      return "/tokenize";
    case ApiRoute::kTranscriptions:
    case ApiRoute::kImageGenerations:
    case ApiRoute::kImageEdits:
    case ApiRoute::kImageVariations:
      return std::nullopt;
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> LlamaCppServer::child_env(
    const std::string& executable) const {
  // Release builds ship their shared libraries (libllama, libggml-*, the
  // ROCm runtime) next to the binary; only the child is told where.
  auto env = release_env(executable);
  // No cross-origin answers: browsers reach models only through the router
  // (issue #24). llama-server from b10015 reads these (an origin no page can
  // have, RFC 2606's .invalid, and no credentials); older ones ignore
  // variables they do not know, and answer every origin, behind the key.
  env.emplace_back("LLAMA_ARG_CORS_ORIGINS", "http://backend-of-lemonade-router.invalid");
  env.emplace_back("LLAMA_ARG_CORS_CREDENTIALS", "false");
  return env;
}

std::vector<std::pair<std::string, std::string>> LlamaCppServer::secret_env() const {
  // llama-server's --api-key, from the environment (common/arg.cpp).
  return {{"LLAMA_API_KEY", secret()}};
}

bool LlamaCppServer::output_reports_out_of_memory(const std::vector<std::string>& lines) const {
  return ggml_output_reports_out_of_memory(lines);
}

}  // namespace lemon
