#include "lemon/models/llama_server_options.h"

#include "lemon/core/text.h"

namespace lemon {
namespace {

using Takes = OptionTakes;

struct Row {
  const char* names;  // comma-separated
  const char* env;
  Takes takes;
};

// llama-server --help, llama.cpp 3f545bec (without --help, --version,
// --cache-list, --completion-bash and --list-devices).
// clang-format off
constexpr Row kRows[] = {
    {"-t,--threads", "LLAMA_ARG_THREADS", Takes::kValue},
    {"-tb,--threads-batch", "", Takes::kValue},
    {"-C,--cpu-mask", "", Takes::kValue},
    {"-Cr,--cpu-range", "", Takes::kValue},
    {"--cpu-strict", "", Takes::kValue},
    {"--prio", "", Takes::kValue},
    {"--poll", "", Takes::kValue},
    {"-Cb,--cpu-mask-batch", "", Takes::kValue},
    {"-Crb,--cpu-range-batch", "", Takes::kValue},
    {"--cpu-strict-batch", "", Takes::kValue},
    {"--prio-batch", "", Takes::kValue},
    {"--poll-batch", "", Takes::kValue},
    {"-c,--ctx-size", "LLAMA_ARG_CTX_SIZE", Takes::kValue},
    {"-n,--predict,--n-predict", "LLAMA_ARG_N_PREDICT", Takes::kValue},
    {"-b,--batch-size", "LLAMA_ARG_BATCH", Takes::kValue},
    {"-ub,--ubatch-size", "LLAMA_ARG_UBATCH", Takes::kValue},
    {"--keep", "", Takes::kValue},
    {"--swa-full", "LLAMA_ARG_SWA_FULL", Takes::kNothing},
    {"-fa,--flash-attn", "LLAMA_ARG_FLASH_ATTN", Takes::kOptionalValue},
    {"--perf,--no-perf", "LLAMA_ARG_PERF", Takes::kNothing},
    {"-e,--escape,--no-escape", "", Takes::kNothing},
    {"--rope-scaling", "LLAMA_ARG_ROPE_SCALING_TYPE", Takes::kValue},
    {"--rope-scale", "LLAMA_ARG_ROPE_SCALE", Takes::kValue},
    {"--rope-freq-base", "LLAMA_ARG_ROPE_FREQ_BASE", Takes::kValue},
    {"--rope-freq-scale", "LLAMA_ARG_ROPE_FREQ_SCALE", Takes::kValue},
    {"--yarn-orig-ctx", "LLAMA_ARG_YARN_ORIG_CTX", Takes::kValue},
    {"--yarn-ext-factor", "LLAMA_ARG_YARN_EXT_FACTOR", Takes::kValue},
    {"--yarn-attn-factor", "LLAMA_ARG_YARN_ATTN_FACTOR", Takes::kValue},
    {"--yarn-beta-slow", "LLAMA_ARG_YARN_BETA_SLOW", Takes::kValue},
    {"--yarn-beta-fast", "LLAMA_ARG_YARN_BETA_FAST", Takes::kValue},
    {"-kvo,--kv-offload,-nkvo,--no-kv-offload", "LLAMA_ARG_KV_OFFLOAD", Takes::kNothing},
    {"--repack,-nr,--no-repack", "LLAMA_ARG_REPACK", Takes::kNothing},
    {"--no-host", "LLAMA_ARG_NO_HOST", Takes::kNothing},
    {"-ctk,--cache-type-k", "LLAMA_ARG_CACHE_TYPE_K", Takes::kValue},
    {"-ctv,--cache-type-v", "LLAMA_ARG_CACHE_TYPE_V", Takes::kValue},
    {"-dt,--defrag-thold", "LLAMA_ARG_DEFRAG_THOLD", Takes::kValue},
    {"--mlock", "LLAMA_ARG_MLOCK", Takes::kNothing},
    {"--mmap,--no-mmap", "LLAMA_ARG_MMAP", Takes::kNothing},
    {"-dio,--direct-io,-ndio,--no-direct-io", "LLAMA_ARG_DIO", Takes::kNothing},
    {"-lm,--load-mode", "LLAMA_ARG_LOAD_MODE", Takes::kValue},
    {"--numa", "LLAMA_ARG_NUMA", Takes::kValue},
    {"-dev,--device", "LLAMA_ARG_DEVICE", Takes::kValue},
    {"-ot,--override-tensor", "LLAMA_ARG_OVERRIDE_TENSOR", Takes::kValue},
    {"-cmoe,--cpu-moe", "LLAMA_ARG_CPU_MOE", Takes::kNothing},
    {"-ncmoe,--n-cpu-moe", "LLAMA_ARG_N_CPU_MOE", Takes::kValue},
    {"-ngl,--gpu-layers,--n-gpu-layers", "LLAMA_ARG_N_GPU_LAYERS", Takes::kValue},
    {"-sm,--split-mode", "LLAMA_ARG_SPLIT_MODE", Takes::kValue},
    {"-ts,--tensor-split", "LLAMA_ARG_TENSOR_SPLIT", Takes::kValue},
    {"-mg,--main-gpu", "LLAMA_ARG_MAIN_GPU", Takes::kValue},
    {"-fit,--fit", "LLAMA_ARG_FIT", Takes::kOptionalValue},
    {"-fitt,--fit-target", "LLAMA_ARG_FIT_TARGET", Takes::kValue},
    {"-fitc,--fit-ctx", "LLAMA_ARG_FIT_CTX", Takes::kValue},
    {"--check-tensors", "", Takes::kNothing},
    {"--override-kv", "", Takes::kValue},
    {"--op-offload,--no-op-offload", "", Takes::kNothing},
    {"--lora", "", Takes::kValue},
    {"--lora-scaled", "", Takes::kValue},
    {"--control-vector", "", Takes::kValue},
    {"--control-vector-scaled", "", Takes::kValue},
    {"--control-vector-layer-range", "", Takes::kValue},
    {"-m,--model", "LLAMA_ARG_MODEL", Takes::kValue},
    {"-mu,--model-url", "LLAMA_ARG_MODEL_URL", Takes::kValue},
    {"-dr,--docker-repo", "LLAMA_ARG_DOCKER_REPO", Takes::kOptionalValue},
    {"-hf,-hfr,--hf-repo", "LLAMA_ARG_HF_REPO", Takes::kValue},
    {"-hff,--hf-file", "LLAMA_ARG_HF_FILE", Takes::kValue},
    {"-hft,--hf-token", "HF_TOKEN", Takes::kValue},
    {"--log-disable", "", Takes::kNothing},
    {"--log-file", "LLAMA_ARG_LOG_FILE", Takes::kValue},
    {"--log-colors", "LLAMA_ARG_LOG_COLORS", Takes::kOptionalValue},
    {"-v,--verbose,--log-verbose", "", Takes::kNothing},
    {"--offline", "LLAMA_ARG_OFFLINE", Takes::kNothing},
    {"-lv,--verbosity,--log-verbosity", "LLAMA_ARG_LOG_VERBOSITY", Takes::kValue},
    {"--log-prefix,--no-log-prefix", "LLAMA_ARG_LOG_PREFIX", Takes::kNothing},
    {"--log-timestamps,--no-log-timestamps", "LLAMA_ARG_LOG_TIMESTAMPS", Takes::kNothing},
    {"--spec-draft-type-k,-ctkd,--cache-type-k-draft", "LLAMA_ARG_SPEC_DRAFT_CACHE_TYPE_K", Takes::kValue},
    {"--spec-draft-type-v,-ctvd,--cache-type-v-draft", "LLAMA_ARG_SPEC_DRAFT_CACHE_TYPE_V", Takes::kValue},
    {"--samplers", "", Takes::kValue},
    {"-s,--seed", "", Takes::kValue},
    {"--sampler-seq,--sampling-seq", "", Takes::kValue},
    {"--ignore-eos", "", Takes::kNothing},
    {"--temp,--temperature", "", Takes::kValue},
    {"--top-k", "LLAMA_ARG_TOP_K", Takes::kValue},
    {"--top-p", "", Takes::kValue},
    {"--min-p", "", Takes::kValue},
    {"--top-nsigma,--top-n-sigma", "", Takes::kValue},
    {"--xtc-probability", "", Takes::kValue},
    {"--xtc-threshold", "", Takes::kValue},
    {"--typical,--typical-p", "", Takes::kValue},
    {"--repeat-last-n", "", Takes::kValue},
    {"--repeat-penalty", "", Takes::kValue},
    {"--presence-penalty", "", Takes::kValue},
    {"--frequency-penalty", "", Takes::kValue},
    {"--dry-multiplier", "", Takes::kValue},
    {"--dry-base", "", Takes::kValue},
    {"--dry-allowed-length", "", Takes::kValue},
    {"--dry-penalty-last-n", "", Takes::kValue},
    {"--dry-sequence-breaker", "", Takes::kValue},
    {"--adaptive-target", "", Takes::kValue},
    {"--adaptive-decay", "", Takes::kValue},
    {"--dynatemp-range", "", Takes::kValue},
    {"--dynatemp-exp", "", Takes::kValue},
    {"--mirostat", "", Takes::kValue},
    {"--mirostat-lr", "", Takes::kValue},
    {"--mirostat-ent", "", Takes::kValue},
    {"-l,--logit-bias", "", Takes::kValue},
    {"--grammar", "", Takes::kValue},
    {"--grammar-file", "", Takes::kValue},
    {"-j,--json-schema", "", Takes::kValue},
    {"-jf,--json-schema-file", "", Takes::kValue},
    {"-bs,--backend-sampling", "LLAMA_ARG_BACKEND_SAMPLING", Takes::kNothing},
    {"--spec-draft-hf,-hfd,-hfrd,--hf-repo-draft", "LLAMA_ARG_SPEC_DRAFT_HF_REPO", Takes::kValue},
    {"--spec-draft-threads,-td,--threads-draft", "", Takes::kValue},
    {"--spec-draft-threads-batch,-tbd,--threads-batch-draft", "", Takes::kValue},
    {"--spec-draft-cpu-mask,-Cd,--cpu-mask-draft", "", Takes::kValue},
    {"--spec-draft-cpu-range,-Crd,--cpu-range-draft", "", Takes::kValue},
    {"--spec-draft-cpu-strict,--cpu-strict-draft", "", Takes::kValue},
    {"--spec-draft-prio,--prio-draft", "", Takes::kValue},
    {"--spec-draft-poll,--poll-draft", "", Takes::kValue},
    {"--spec-draft-cpu-mask-batch,-Cbd,--cpu-mask-batch-draft", "", Takes::kValue},
    {"--spec-draft-cpu-strict-batch,--cpu-strict-batch-draft", "", Takes::kValue},
    {"--spec-draft-prio-batch,--prio-batch-draft", "", Takes::kValue},
    {"--spec-draft-poll-batch,--poll-batch-draft", "", Takes::kValue},
    {"--spec-draft-override-tensor,-otd,--override-tensor-draft", "", Takes::kValue},
    {"--spec-draft-cpu-moe,-cmoed,--cpu-moe-draft", "LLAMA_ARG_SPEC_DRAFT_CPU_MOE", Takes::kNothing},
    {"--spec-draft-n-cpu-moe,--spec-draft-ncmoe,-ncmoed,--n-cpu-moe-draft", "LLAMA_ARG_SPEC_DRAFT_N_CPU_MOE", Takes::kValue},
    {"--spec-draft-n-max", "LLAMA_ARG_SPEC_DRAFT_N_MAX", Takes::kValue},
    {"--spec-draft-n-min", "LLAMA_ARG_SPEC_DRAFT_N_MIN", Takes::kValue},
    {"--spec-draft-p-split,--draft-p-split", "LLAMA_ARG_SPEC_DRAFT_P_SPLIT", Takes::kValue},
    {"--spec-draft-p-min,--draft-p-min", "LLAMA_ARG_SPEC_DRAFT_P_MIN", Takes::kValue},
    {"--spec-draft-backend-sampling,--no-spec-draft-backend-sampling", "LLAMA_ARG_SPEC_DRAFT_BACKEND_SAMPLING", Takes::kNothing},
    {"--spec-draft-device,-devd,--device-draft", "", Takes::kValue},
    {"--spec-draft-ngl,-ngld,--gpu-layers-draft,--n-gpu-layers-draft", "LLAMA_ARG_N_GPU_LAYERS_DRAFT", Takes::kValue},
    {"--spec-draft-model,-md,--model-draft", "LLAMA_ARG_SPEC_DRAFT_MODEL", Takes::kValue},
    {"--spec-type", "LLAMA_ARG_SPEC_TYPE", Takes::kValue},
    {"--spec-ngram-mod-n-min", "", Takes::kValue},
    {"--spec-ngram-mod-n-max", "", Takes::kValue},
    {"--spec-ngram-mod-n-match", "", Takes::kValue},
    {"--spec-ngram-simple-size-n", "", Takes::kValue},
    {"--spec-ngram-simple-size-m", "", Takes::kValue},
    {"--spec-ngram-simple-min-hits", "", Takes::kValue},
    {"--spec-ngram-map-k-size-n", "", Takes::kValue},
    {"--spec-ngram-map-k-size-m", "", Takes::kValue},
    {"--spec-ngram-map-k-min-hits", "", Takes::kValue},
    {"--spec-ngram-map-k4v-size-n", "", Takes::kValue},
    {"--spec-ngram-map-k4v-size-m", "", Takes::kValue},
    {"--spec-ngram-map-k4v-min-hits", "", Takes::kValue},
    {"--draft,--draft-n,--draft-max", "LLAMA_ARG_DRAFT_MAX", Takes::kValue},
    {"--draft-min,--draft-n-min", "LLAMA_ARG_DRAFT_MIN", Takes::kValue},
    {"--spec-ngram-size-n", "", Takes::kValue},
    {"--spec-ngram-size-m", "", Takes::kValue},
    {"--spec-ngram-min-hits", "", Takes::kValue},
    {"-lcs,--lookup-cache-static", "", Takes::kValue},
    {"-lcd,--lookup-cache-dynamic", "", Takes::kValue},
    {"-ctxcp,--ctx-checkpoints,--swa-checkpoints", "LLAMA_ARG_CTX_CHECKPOINTS", Takes::kValue},
    {"-cms,--checkpoint-min-step", "LLAMA_ARG_CHECKPOINT_MIN_SPACING_NT", Takes::kValue},
    {"-cram,--cache-ram", "LLAMA_ARG_CACHE_RAM", Takes::kValue},
    {"-kvu,--kv-unified,-no-kvu,--no-kv-unified", "LLAMA_ARG_KV_UNIFIED", Takes::kNothing},
    {"--cache-idle-slots,--no-cache-idle-slots", "LLAMA_ARG_CACHE_IDLE_SLOTS", Takes::kNothing},
    {"--context-shift,--no-context-shift", "LLAMA_ARG_CONTEXT_SHIFT", Takes::kNothing},
    {"-r,--reverse-prompt", "", Takes::kValue},
    {"-sp,--special", "", Takes::kNothing},
    {"--warmup,--no-warmup", "", Takes::kNothing},
    {"--spm-infill", "", Takes::kNothing},
    {"--pooling", "LLAMA_ARG_POOLING", Takes::kValue},
    {"-np,--parallel", "LLAMA_ARG_N_PARALLEL", Takes::kValue},
    {"-cb,--cont-batching,-nocb,--no-cont-batching", "LLAMA_ARG_CONT_BATCHING", Takes::kNothing},
    {"-mm,--mmproj", "LLAMA_ARG_MMPROJ", Takes::kValue},
    {"-mmu,--mmproj-url", "LLAMA_ARG_MMPROJ_URL", Takes::kValue},
    {"--mmproj-auto,--no-mmproj,--no-mmproj-auto", "LLAMA_ARG_MMPROJ_AUTO", Takes::kNothing},
    {"--mmproj-offload,--no-mmproj-offload", "LLAMA_ARG_MMPROJ_OFFLOAD", Takes::kNothing},
    {"-mmdev,--mmproj-device", "MTMD_BACKEND_DEVICE", Takes::kValue},
    {"--image-min-tokens", "LLAMA_ARG_IMAGE_MIN_TOKENS", Takes::kValue},
    {"--image-max-tokens", "LLAMA_ARG_IMAGE_MAX_TOKENS", Takes::kValue},
    {"--mtmd-batch-max-tokens", "LLAMA_ARG_MTMD_BATCH_MAX_TOKENS", Takes::kValue},
    {"-a,--alias", "LLAMA_ARG_ALIAS", Takes::kValue},
    {"--tags", "LLAMA_ARG_TAGS", Takes::kValue},
    {"--embd-normalize", "", Takes::kValue},
    {"--host", "LLAMA_ARG_HOST", Takes::kValue},
    {"--port", "LLAMA_ARG_PORT", Takes::kValue},
    {"--reuse-port", "LLAMA_ARG_REUSE_PORT", Takes::kNothing},
    {"--path", "LLAMA_ARG_STATIC_PATH", Takes::kValue},
    {"--cors-origins", "LLAMA_ARG_CORS_ORIGINS", Takes::kValue},
    {"--cors-methods", "LLAMA_ARG_CORS_METHODS", Takes::kValue},
    {"--cors-headers", "LLAMA_ARG_CORS_HEADERS", Takes::kValue},
    {"--cors-credentials,--no-cors-credentials", "LLAMA_ARG_CORS_CREDENTIALS", Takes::kNothing},
    {"--api-prefix", "LLAMA_ARG_API_PREFIX", Takes::kValue},
    {"--ui-config,--webui-config", "LLAMA_ARG_UI_CONFIG", Takes::kValue},
    {"--ui-config-file,--webui-config-file", "LLAMA_ARG_UI_CONFIG_FILE", Takes::kValue},
    {"--ui-mcp-proxy,--webui-mcp-proxy,--no-ui-mcp-proxy,--no-webui-mcp-proxy", "LLAMA_ARG_UI_MCP_PROXY", Takes::kNothing},
    {"--tools", "LLAMA_ARG_TOOLS", Takes::kValue},
    {"--tools-runtime", "LLAMA_ARG_TOOLS_RUNTIME", Takes::kValue},
    {"--mcp-servers-config", "LLAMA_ARG_MCP_SERVERS_CONFIG", Takes::kValue},
    {"--mcp-servers-json", "LLAMA_ARG_MCP_SERVERS_JSON", Takes::kValue},
    {"-ag,--agent,-no-ag,--no-agent", "LLAMA_ARG_AGENT", Takes::kNothing},
    {"--ui,--webui,--no-ui,--no-webui", "LLAMA_ARG_UI", Takes::kNothing},
    {"--embedding,--embeddings", "LLAMA_ARG_EMBEDDINGS", Takes::kNothing},
    {"--rerank,--reranking", "LLAMA_ARG_RERANKING", Takes::kNothing},
    {"--api-key", "LLAMA_API_KEY", Takes::kValue},
    {"--api-key-file", "LLAMA_ARG_API_KEY_FILE", Takes::kValue},
    {"--ssl-key-file", "LLAMA_ARG_SSL_KEY_FILE", Takes::kValue},
    {"--ssl-cert-file", "LLAMA_ARG_SSL_CERT_FILE", Takes::kValue},
    {"--chat-template-kwargs", "LLAMA_ARG_CHAT_TEMPLATE_KWARGS", Takes::kValue},
    {"-to,--timeout", "LLAMA_ARG_TIMEOUT", Takes::kValue},
    {"--sse-ping-interval", "LLAMA_ARG_SSE_PING_INTERVAL", Takes::kValue},
    {"--threads-http", "LLAMA_ARG_THREADS_HTTP", Takes::kValue},
    {"--cache-prompt,--no-cache-prompt", "LLAMA_ARG_CACHE_PROMPT", Takes::kNothing},
    {"--cache-reuse", "LLAMA_ARG_CACHE_REUSE", Takes::kValue},
    {"--metrics", "LLAMA_ARG_ENDPOINT_METRICS", Takes::kNothing},
    {"--props", "LLAMA_ARG_ENDPOINT_PROPS", Takes::kNothing},
    {"--slots,--no-slots", "LLAMA_ARG_ENDPOINT_SLOTS", Takes::kNothing},
    {"--slot-save-path", "", Takes::kValue},
    {"--media-path", "", Takes::kValue},
    {"--models-dir", "LLAMA_ARG_MODELS_DIR", Takes::kValue},
    {"--models-preset", "LLAMA_ARG_MODELS_PRESET", Takes::kValue},
    {"--models-max", "LLAMA_ARG_MODELS_MAX", Takes::kValue},
    {"--models-autoload,--no-models-autoload", "LLAMA_ARG_MODELS_AUTOLOAD", Takes::kNothing},
    {"--jinja,--no-jinja", "LLAMA_ARG_JINJA", Takes::kNothing},
    {"--reasoning-format", "LLAMA_ARG_THINK", Takes::kValue},
    {"-rea,--reasoning", "LLAMA_ARG_REASONING", Takes::kOptionalValue},
    {"--reasoning-effort", "LLAMA_ARG_REASONING_EFFORT", Takes::kValue},
    {"--reasoning-budget", "LLAMA_ARG_THINK_BUDGET", Takes::kValue},
    {"--reasoning-budget-message", "LLAMA_ARG_THINK_BUDGET_MESSAGE", Takes::kValue},
    {"--reasoning-preserve,--no-reasoning-preserve", "LLAMA_ARG_REASONING_PRESERVE", Takes::kNothing},
    {"--chat-template", "LLAMA_ARG_CHAT_TEMPLATE", Takes::kValue},
    {"--chat-template-file", "LLAMA_ARG_CHAT_TEMPLATE_FILE", Takes::kValue},
    {"--skip-chat-parsing,--no-skip-chat-parsing", "LLAMA_ARG_SKIP_CHAT_PARSING", Takes::kNothing},
    {"--prefill-assistant,--no-prefill-assistant", "LLAMA_ARG_PREFILL_ASSISTANT", Takes::kNothing},
    {"-sps,--slot-prompt-similarity", "", Takes::kValue},
    {"--lora-init-without-apply", "", Takes::kNothing},
    {"--sleep-idle-seconds", "", Takes::kValue},
    {"--log-prompts-dir", "", Takes::kValue},
    {"--embd-gemma-default", "", Takes::kNothing},
    {"--fim-qwen-1.5b-default", "", Takes::kNothing},
    {"--fim-qwen-3b-default", "", Takes::kNothing},
    {"--fim-qwen-7b-default", "", Takes::kNothing},
    {"--fim-qwen-7b-spec", "", Takes::kNothing},
    {"--fim-qwen-14b-spec", "", Takes::kNothing},
    {"--fim-qwen-30b-default", "", Takes::kNothing},
    {"--gpt-oss-20b-default", "", Takes::kNothing},
    {"--gpt-oss-120b-default", "", Takes::kNothing},
    {"--vision-gemma-4b-default", "", Takes::kNothing},
    {"--vision-gemma-12b-default", "", Takes::kNothing},
    {"--spec-default", "", Takes::kNothing},
};
// clang-format on

std::vector<std::string> split_names(std::string_view names) {
  std::vector<std::string> out;
  for (std::string_view name : split(names, ',')) {
    out.emplace_back(name);
  }
  return out;
}

std::string_view without_dashes(std::string_view name) {
  while (name.starts_with('-')) {
    name.remove_prefix(1);
  }
  return name;
}

}  // namespace

std::string LlamaServerOption::flag() const {
  for (const auto& n : names) {
    if (n.starts_with("--") && !n.starts_with("--no-")) {
      return n;
    }
  }
  return names.front();
}

std::string LlamaServerOption::negative_flag() const {
  for (const auto& n : names) {
    if (n.starts_with("--no-")) {
      return n;
    }
  }
  return {};
}

const std::vector<LlamaServerOption>& llama_server_options() {
  static const std::vector<LlamaServerOption> options = [] {
    std::vector<LlamaServerOption> out;
    for (const Row& row : kRows) {
      out.push_back({split_names(row.names), row.env, row.takes});
    }
    return out;
  }();
  return options;
}

std::optional<OptionMatch> find_llama_server_option(std::string_view key) {
  if (key.empty()) {
    return std::nullopt;
  }
  for (const auto& option : llama_server_options()) {
    if (!option.env.empty() && option.env == key) {
      return OptionMatch{&option, false};
    }
    for (const auto& name : option.names) {
      if (without_dashes(name) == key) {
        return OptionMatch{&option, name.starts_with("--no-") && option.names.size() > 1};
      }
    }
  }
  return std::nullopt;
}

}  // namespace lemon
