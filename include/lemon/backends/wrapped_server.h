// WrappedServer: one backend server for one model (seed 000). The router
// owns it through a shared_ptr shared with the Leases of in-flight requests;
// the HTTP layer talks to it through client() and upstream_path().
//
// Lifecycle: constructed complete (model, effective options) -> prepare()
// (deterministic checks, no side effects) -> start() (spawn, wait ready) ->
// stop(). Only the router's loader thread calls prepare/start/stop; every
// other method may be called from any thread.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/backends/backend_report.h"
#include "lemon/core/device_bytes.h"
#include "lemon/core/error.h"
#include "lemon/core/model_types.h"
#include "lemon/models/model_info.h"
#include "lemon/models/recipe_options.h"

namespace lemon {

namespace net {
class UpstreamClient;
}

// The inference routes a backend may serve.
enum class ApiRoute {
  kChatCompletions,
  kCompletions,
  kResponses,
  kEmbeddings,
  kReranking,
  kTranscriptions,
  kImageGenerations,
  kImageEdits,       // multipart: prompt, image(s), optional mask
  kImageVariations,  // multipart: image, no prompt
  kTokenize,         // {"content"} -> {"tokens":[...]} (Anthropic's count_tokens)
};

// One field of a multipart/form-data body. `data` views bytes that outlive
// the form: the client's request body (an upload is never copied before the
// backend's body is written), a literal, or `storage` when the router wrote
// the value (made by text()). Copies share `storage`, so their views stay
// valid.
struct FormField {
  std::string name;
  std::string filename;      // "" when it is not a file
  std::string content_type;  // "" when absent
  std::string_view data;
  std::shared_ptr<const std::string> storage = nullptr;

  // A plain field whose value the router made.
  static FormField text(std::string name, std::string value) {
    auto owned = std::make_shared<const std::string>(std::move(value));
    return FormField{std::move(name), "", "", *owned, owned};
  }
};

// The model type a route needs ("chat on an embedding model" is a 400).
ModelType model_type_for_route(ApiRoute route);
const char* api_route_name(ApiRoute route);  // "chat/completions", ...
// OpenAI's path for `route` ("/v1/" and its name: "/v1/chat/completions")
// when `served` holds it, else nullopt: upstream_path() of a backend that
// serves those routes at OpenAI's paths.
std::optional<std::string> openai_path(ApiRoute route, std::initializer_list<ApiRoute> served);

// How many requests a backend serves at once, and the context each gets.
// total == 0: the backend takes any number (the router does not limit it).
struct RequestSlots {
  int total = 0;
  int ctx_size = 0;  // tokens per slot; 0 when the recipe has no context option
  // Requests the backend queues itself, beyond `total`, and starts the
  // moment a slot frees (llama-server's task queue). The router sends that
  // many more while no session holds a slot, so the next request is already
  // waiting inside the backend instead of in the router's line.
  int queued_ahead = 0;
};

// The context chosen for a load whose ctx_size asks for the context fitted
// to memory (-1, "auto"; router/context_fit.h): tokens per slot, and why.
struct FittedContext {
  int ctx_size = 0;
  std::string reason;  // "memory", "trained_context", "floor", "not_measured"
  std::string detail;  // the same in a sentence, with the figures
};

class WrappedServer {
 public:
  WrappedServer(ModelInfo model, RecipeOptions options, Device device)
      : model_(std::move(model)), options_(std::move(options)), device_(device) {}
  virtual ~WrappedServer() = default;
  WrappedServer(const WrappedServer&) = delete;
  WrappedServer& operator=(const WrappedServer&) = delete;

  const ModelInfo& model() const { return model_; }
  const std::string& model_name() const { return model_.name; }
  // The effective load options (after layering), restricted to the recipe.
  const RecipeOptions& options() const { return options_; }
  ModelType type() const { return model_.type; }
  Device device() const { return device_; }

  // The backend's request slots. The router never leases more than `total`
  // + `queued_ahead` requests at once to it; extra requests wait in the
  // router's line for a slot.
  virtual RequestSlots slots() const { return {}; }

  // Checks that cannot change by retrying: model files present
  // (kModelFilesMissing naming the path), backend binary found
  // (kBackendBinaryMissing), user arguments valid (kInvalidUserArgs naming
  // the flag). Reads the file system only.
  virtual Status prepare() = 0;

  // Starts the backend and blocks until it is ready, `cancelled()` returns
  // true (kCancelled), it exits (kBackendExited with exit status and last
  // output lines as detail), or the load timeout passes
  // (kBackendStartTimeout). A failed start leaves nothing running.
  virtual Status start(const std::function<bool()>& cancelled) = 0;

  // Stops the backend (SIGTERM, grace, SIGKILL) and waits until it is gone.
  // Idempotent. After stop() the exit listener is never called.
  virtual void stop() = 0;

  // Called at most once, from a monitor thread, when the backend exits
  // without stop() having been called. Set before start().
  void set_exit_listener(std::function<void()> listener) { exit_listener_ = std::move(listener); }
  // True once the backend process has exited (crash or stop).
  virtual bool exited() const = 0;

  // "http://127.0.0.1:<port>" once started.
  virtual std::string base_url() const = 0;
  virtual std::optional<int> pid() const = 0;
  // The connection pool to this backend. REQUIRES: start() succeeded.
  virtual net::UpstreamClient& client() = 0;

  // The backend's path for `route`, or nullopt if this recipe does not serve
  // it (-> 400 unsupported_operation).
  virtual std::optional<std::string> upstream_path(ApiRoute route) const = 0;
  // A rewritten request body for the backend, or nullopt to forward the
  // client's body unchanged (e.g. FLM wants its checkpoint as "model").
  virtual std::optional<std::string> rewrite_body(ApiRoute route,
                                                  const nlohmann::json& body) const {
    (void)route;
    (void)body;
    return std::nullopt;
  }

  // Long prompts. Whether a streamed chat or completion may ask
  // this backend for its prompt progress ("return_progress", llama-server;
  // prompt_progress.h).
  virtual bool reports_prompt_progress() const { return false; }
  // Whether the backend says it is working on a request now (llama-server:
  // a slot processing in GET /slots), for a request that has heard nothing
  // from it for its idle timeout. Default: it cannot say (false).
  virtual bool reports_work_in_progress() { return false; }
  // The prompt's tokens for a chat or completion `body`, counted as the
  // backend counts them (llama-server: /apply-template, then /tokenize),
  // for --max-prefill-tokens; nullopt when it cannot count.
  virtual std::optional<long long> count_prompt_tokens(ApiRoute route, const nlohmann::json& body) {
    (void)route;
    (void)body;
    return std::nullopt;
  }

  // For multipart routes: OK, or why the backend must not be given this form
  // (checked before rewrite_form).
  virtual Status check_form(ApiRoute route, const std::vector<FormField>& fields) const {
    (void)route;
    (void)fields;
    return {};
  }

  // For multipart routes (image edits and variations): the form the backend
  // takes, built from the client's `fields`, or nullopt to forward the
  // client's body unchanged.
  virtual std::optional<std::vector<FormField>> rewrite_form(
      ApiRoute route, const std::vector<FormField>& fields) const {
    (void)route;
    (void)fields;
    return std::nullopt;
  }

  // A successful (2xx) non-streaming answer that is in fact a refusal, as the
  // client should get it; nullopt when the answer is what it says.
  // whisper-server answers an upload it cannot read with 200 and
  // {"error":"..."}.
  virtual std::optional<Error> refusal_in_answer(ApiRoute route, std::string_view body) const {
    (void)route;
    (void)body;
    return std::nullopt;
  }

  // What this server will hold in memory, per device, before
  // it starts: the model's files plus a per-backend overhead, charged to
  // "ram" or to the GPU it runs on ("gpu<N>", the `gpu` option, else gpu0).
  // Recipes that know better override it (llama.cpp adds its KV cache).
  virtual DeviceBytes memory_estimate() const;
  // Whether its context is fitted to memory before it starts: ctx_size
  // asks for it and the recipe can (llama.cpp). Default: no.
  virtual bool fits_context() const { return false; }
  // memory_estimate() with `ctx_size` tokens per slot. Default: the
  // estimate, which does not depend on a context.
  virtual DeviceBytes memory_estimate_at(int ctx_size) const {
    (void)ctx_size;
    return memory_estimate();
  }
  // The context the model was trained with (a GGUF's context_length);
  // nullopt when unknown.
  virtual std::optional<int> trained_context() const { return std::nullopt; }
  // The context chosen for a server that fits_context(): set by the
  // loader thread before prepare() and start(), never after (its
  // publication makes it visible to other threads).
  void set_fitted_context(FittedContext fit) { fitted_ = std::move(fit); }
  const std::optional<FittedContext>& fitted_context() const { return fitted_; }
  // How it drafts tokens (speculative decoding): {"draft": the draft
  // model's checkpoint or file, or null; "mtp": the model's own multi-token
  // prediction}, or null when it does not speculate. Default: null.
  virtual nlohmann::json speculation() const { return nullptr; }
  // The process group's resident memory now (0 when not running).
  virtual std::int64_t measured_rss() const { return 0; }

  // How the backend's process ended ("exit code 0", "killed by signal 9
  // (SIGKILL)"), or "" while it runs or when there is none.
  virtual std::string exit_description() const { return {}; }

  // What the backend last said of itself (backend_report.h: load progress,
  // ready, sleeping); nullopt for a backend that does not report.
  virtual std::optional<BackendReport> backend_report() const { return std::nullopt; }
  // Who hears of each change of backend_report(), on the thread that read it
  // (the process monitor's). Set before start().
  virtual void set_state_listener(const BackendReportBoard::Listener& listener) { (void)listener; }
  // Its process's command line, executable first: the running one, else the
  // one the next start() would use with port 0. Never holds a secret (those
  // go through the environment). Empty when it has none.
  virtual std::vector<std::string> command_line() const { return {}; }

  // The backend's last output lines, oldest first.
  virtual std::vector<std::string> last_output(std::size_t n) const = 0;
  // The folder this server saves its slots in and restores them from
  // (SlotStore), or "" when it keeps none. Set by prepare().
  virtual std::string slot_save_dir() const { return {}; }

 protected:
  const std::function<void()>& exit_listener() const { return exit_listener_; }
  void notify_unexpected_exit() const {
    if (exit_listener_) {
      exit_listener_();
    }
  }

 private:
  const ModelInfo model_;
  const RecipeOptions options_;
  const Device device_;
  std::optional<FittedContext> fitted_;
  std::function<void()> exit_listener_;
};

}  // namespace lemon
