// LlamaCppServer: the `llamacpp` recipe, served by llama.cpp's llama-server.
//
// Command line (Lemonade 9.4.1's, plus --host so the child never
// listens beyond loopback):
//   -m <gguf> --ctx-size N --port P --host 127.0.0.1 --jinja
//   [--mmproj F [--no-mmproj-offload on cpu]] [--context-shift on vulkan/rocm]
//   --keep 16 --reasoning-format auto --no-webui
//   [--embeddings | --reranking by model type] -ngl 99|0
//   [--slot-save-path <slot cache>/<model>/<identity>]
//   [-md <draft> --spec-type draft-simple|draft-mtp ... (speculation.h)]
//   <llamacpp_args...>
// Embedding models get a context of at least 8192. Flags the router owns are
// refused in llamacpp_args; defaults the user names in llamacpp_args (exact
// flag match, or its --no- twin) are left out. The child gets its secret as
// LLAMA_API_KEY and no cross-origin answers (LLAMA_ARG_CORS_*), from its
// environment.
//
// The child runs in llama-server's router child mode (LLAMA_SERVER_ROUTER_PORT
// in its environment; backend_report.h): it reports its load progress and
// readiness on stdout, which backend_report() keeps. Its stdin is a pipe the
// router holds: that mode exits when its stdin ends (so also when the router
// dies), and once loaded it waits for that pipe before it exits, so stop()
// first writes its exit command there. A llama-server too old for that mode
// ignores the variable and reports nothing; nothing else changes.
#pragma once

#include <atomic>

#include "lemon/backends/llama_server_flags.h"
#include "lemon/backends/process_server.h"

namespace lemon {

class LlamaCppServer final : public ProcessServer {
 public:
  LlamaCppServer(const ModelInfo& model, const RecipeOptions& options,
                 const BackendEnvironment& env);

  // ProcessServer's checks, then the slot folder: its
  // identity hashes what a saved slot depends on, the weights (the file's
  // real path, size and mtime: a hub blob's path is its hash), the context
  // per slot, the KV cache types and every llamacpp_args flag, the backend
  // and its binary (path, size, mtime). None when the cache is off, or
  // when llamacpp_args names its own --slot-save-path.
  Status prepare() override;
  // Makes the slot folder (llama-server refuses a missing one), then starts.
  Status start(const std::function<bool()>& cancelled) override;
  std::string slot_save_dir() const override { return slot_dir_; }
  Result<std::vector<std::string>> build_args(int port) const override;
  // `parallel` slots of ctx_size tokens each (the KV cache holds their
  // product; llama-server gets --parallel N --ctx-size N*ctx); the fitted
  // context when one was set.
  RequestSlots slots() const override;
  // The GGUF's tensors (from its header) and mmproj, the KV cache for
  // parallel x ctx_size tokens, and compute buffers; on the GPU the model
  // runs on (the `gpu` option; its child sees only that GPU), else in RAM.
  // With speculation (speculation.h), the draft model's weights, KV cache
  // for the same context and compute buffers, or the KV cache of the
  // model's own prediction layers, on the same device.
  DeviceBytes memory_estimate() const override;
  // ctx_size -1 or "auto".
  bool fits_context() const override { return options().fitted_context(); }
  DeviceBytes memory_estimate_at(int ctx_size) const override;
  // The GGUF header's <arch>.context_length.
  std::optional<int> trained_context() const override;
  // The speculation's part of it, for `tokens` tokens of context in all.
  std::int64_t speculation_bytes(std::int64_t tokens) const;
  nlohmann::json speculation() const override;
  bool reports_prompt_progress() const override { return true; }
  bool reports_work_in_progress() override;
  std::optional<long long> count_prompt_tokens(ApiRoute route, const nlohmann::json& body) override;
  std::optional<std::string> upstream_path(ApiRoute route) const override;
  // Stops the child, and its output's state lines reach no listener after.
  ~LlamaCppServer() override;
  std::optional<BackendReport> backend_report() const override { return board_->latest(); }
  void set_state_listener(const BackendReportBoard::Listener& listener) override {
    board_->set_listener(listener);
  }

  // The flags llamacpp_args may not contain.
  static const std::vector<std::string>& reserved_flags();

 protected:
  BinaryQuery binary_query() const override;
  std::string health_path() const override { return "/health"; }
  std::vector<std::string> required_roles() const override;
  bool output_reports_out_of_memory(const std::vector<std::string>& lines) const override;
  std::vector<std::pair<std::string, std::string>> child_env(
      const std::string& executable) const override;
  std::vector<std::pair<std::string, std::string>> secret_env() const override;
  void adjust_spawn(SpawnSpec& spec) override;
  void ask_to_stop(ChildProcess& child) override;

 private:
  std::string backend() const;
  // The context a slot gets when `asked` is asked for (embedding models
  // get at least 8192).
  int context_per_slot(int asked) const;

  std::string slot_dir_;  // set by prepare()
  // The binary's flags, read by prepare() for a model that speculates
  // (speculation.h); every flag until then.
  LlamaServerFlags flags_ = LlamaServerFlags::everything();
  // Shared with the spawn's line hook, which the process monitor may call
  // until the child's output ends.
  std::shared_ptr<BackendReportBoard> board_ = std::make_shared<BackendReportBoard>();
  // Whether the running child answered /health (start() succeeded).
  std::atomic<bool> served_{false};
};

}  // namespace lemon
