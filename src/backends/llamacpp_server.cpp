#include "lemon/backends/llamacpp_server.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "backend_call.h"
#include "lemon/backends/out_of_memory.h"
#include "lemon/backends/slot_files.h"
#include "lemon/backends/speculation.h"
#include "lemon/backends/user_args.h"
#include "lemon/core/log.h"
#include "lemon/net/upstream_client.h"

namespace lemon {
namespace {

constexpr int kEmbeddingMinContext = 8192;
// How long a child that reported its load waits for its `ready` line once
// /health answers 200.
constexpr std::chrono::milliseconds kReadyLineWait{2000};

}  // namespace

LlamaCppServer::LlamaCppServer(const ModelInfo& model, const RecipeOptions& options,
                               const BackendEnvironment& env)
    : ProcessServer(model, options,
                    device_for_recipe("llamacpp", backend_or_cpu("llamacpp", options)), env) {}

LlamaCppServer::~LlamaCppServer() {
  stop();
  board_->set_listener(nullptr);
}

std::string LlamaCppServer::backend() const {
  return backend_or_cpu("llamacpp", options());
}

BinaryQuery LlamaCppServer::binary_query() const {
  return {"llamacpp", backend(), "llama-server"};
}

std::vector<std::string> LlamaCppServer::required_roles() const {
  std::vector<std::string> roles = {"main"};
  if (model().checkpoints.count("mmproj") != 0) {
    roles.emplace_back("mmproj");
  }
  if (model().checkpoints.count("draft") != 0 && options().bool_value("speculative", true)) {
    roles.emplace_back("draft");
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

int LlamaCppServer::context_per_slot(int asked) const {
  return type() == ModelType::kEmbedding ? std::max(asked, kEmbeddingMinContext) : asked;
}

RequestSlots LlamaCppServer::slots() const {
  const int ctx =
      context_per_slot(fitted_context() ? fitted_context()->ctx_size : options().ctx_size());
  // llama-server queues what finds every slot busy and starts it when one
  // frees; one request waiting there hides the router's hand-off between
  // requests. Its HTTP threads take it: --parallel + 4 by default
  // (+ 2 in older releases), of which the requests hold --parallel + 1.
  return {options().int_value("parallel", 1), ctx, 1};
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
  if (model().checkpoints.count("draft") != 0) {
    if (auto draft = check_reserved_flags(*user, draft_model_flags()); !draft.ok()) {
      return std::move(draft).error().with_detail(
          "The model names its draft model (checkpoints.draft): another draft goes there or in "
          "a preset's 'draft', and 'speculative': false loads the model without one.");
    }
  }
  const std::string be = backend();
  const bool gpu = be != "cpu";
  // Each of the `parallel` slots gets ctx_size tokens: llama-server splits
  // --ctx-size evenly between --parallel slots unless the KV cache is unified
  // (which it is only when --parallel is left on auto). So a request never
  // fails for lack of context because others are running (Lemonade
  // #3276).
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
  std::string left_out;
  const auto speculation =
      speculation_args(speculation_of(model(), options(), *user), *user, flags_, gpu, left_out);
  args.insert(args.end(), speculation.begin(), speculation.end());
  if (!slot_dir_.empty()) {
    args.insert(args.end(), {"--slot-save-path", slot_dir_});
  }
  args.insert(args.end(), user->begin(), user->end());
  return args;
}

namespace {

// A file's identity for the slot cache: its real path, size and mtime.
nlohmann::json file_identity(const std::string& path) {
  std::error_code ec;
  const auto real = std::filesystem::weakly_canonical(path, ec);
  const auto size = std::filesystem::file_size(path, ec);
  const auto mtime = std::filesystem::last_write_time(path, ec);
  return {{"path", ec ? path : real.string()},
          {"size", ec ? 0 : size},
          {"mtime_ns",
           std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count()}};
}

// The value of the first of `names` in `args`, or "".
std::string flag_value(const std::vector<std::string>& args,
                       std::initializer_list<std::string_view> names) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    for (auto name : names) {
      if (args[i] == name) {
        return args[i + 1];
      }
    }
  }
  return {};
}

}  // namespace

Status LlamaCppServer::prepare() {
  if (Status checked = ProcessServer::prepare(); !checked.ok()) {
    return checked;
  }
  slot_dir_.clear();
  auto user = split_user_args(options().string_value("llamacpp_args"));
  if (user.ok() && speculation_of(model(), options(), *user).on()) {
    // Only a speculating model pays for reading the binary's flags (once
    // per binary).
    flags_ =
        known_llama_server_flags(environment().launcher, executable(), release_env(executable()));
    std::string left_out;
    speculation_args(speculation_of(model(), options(), *user), *user, flags_, backend() != "cpu",
                     left_out);
    if (!left_out.empty()) {
      logger("backend")->warn("'{}': left out for {}: {}", model_name(), executable(), left_out);
    }
  }
  if (environment().slot_cache_dir.empty() || !user.ok() ||
      has_any_flag(*user, {"--slot-save-path"})) {
    return ok_status();
  }
  const nlohmann::json identity = {{"weights", file_identity(model().resolved_path("main"))},
                                   {"ctx_per_slot", slots().ctx_size},
                                   {"cache_type_k", flag_value(*user, {"-ctk", "--cache-type-k"})},
                                   {"cache_type_v", flag_value(*user, {"-ctv", "--cache-type-v"})},
                                   {"llamacpp_args", *user},
                                   {"type", model_type_name(type())},
                                   {"backend", backend()},
                                   {"binary", file_identity(executable())}};
  slot_dir_ = (std::filesystem::path(environment().slot_cache_dir) /
               slot_model_folder(model_name()) / slot_identity_hash(identity.dump()))
                  .string();
  return ok_status();
}

Status LlamaCppServer::start(const std::function<bool()>& cancelled) {
  if (!slot_dir_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(slot_dir_, ec);
    if (ec) {
      logger("backend")->warn("'{}': cannot make the slot folder {} ({}); keeping no slots",
                              model_name(), slot_dir_, ec.message());
      slot_dir_.clear();
    }
  }
  board_->reset();
  served_ = false;
  Status started = ProcessServer::start(cancelled);
  served_ = started.ok();
  if (started.ok() && board_->latest()) {
    // It reports (child mode): its `ready` line, with its model's info,
    // follows /health's 200 within milliseconds; waiting for it lets the
    // load's success come after the model's info.
    board_->wait_ready(kReadyLineWait);
  }
  return started;
}

void LlamaCppServer::adjust_spawn(SpawnSpec& spec) {
  spec.input_pipe = true;
  spec.line_hook = [board = board_, watch = load_watch()](const std::string& line) {
    if (!line.starts_with(kChildStatePrefix)) {
      return false;
    }
    if (auto state = parse_backend_report_line(line)) {
      // Each report is progress: the load's stage, or its end.
      watch->progress(state->progress ? load_stage_text(*state->progress)
                                      : std::string(backend_phase_name(state->phase)),
                      LoadClock::now());
      board->report(std::move(*state));
    }
    return true;
  };
}

void LlamaCppServer::ask_to_stop(ChildProcess& child) {
  // A child that said it is ready reads its stdin: its exit command stops
  // it cleanly (a SIGTERM would leave it waiting for its stdin to end,
  // then exit 1). Before that, or without child mode, SIGTERM stops it.
  // One that served and reported its load says ready within milliseconds
  // (its line may still be on its way when a stop follows the load at once).
  if (served_ && board_->latest() && !board_->ready()) {
    board_->wait_ready(std::min(kReadyLineWait, environment().stop_grace));
  }
  if (board_->ready() && child.write_input(kChildExitCommand)) {
    child.wait_exit_until(std::chrono::steady_clock::now() + environment().stop_grace);
  }
}

nlohmann::json LlamaCppServer::speculation() const {
  auto user = split_user_args(options().string_value("llamacpp_args"));
  const Speculation s =
      speculation_of(model(), options(), user.ok() ? *user : std::vector<std::string>{});
  if (!s.on()) {
    return nullptr;
  }
  nlohmann::json draft = nullptr;
  if (!s.draft_path.empty()) {
    const auto named = model().checkpoints.find("draft");
    draft = s.draft_from_args || named == model().checkpoints.end() ? s.draft_path : named->second;
  }
  return {{"draft", std::move(draft)}, {"mtp", s.mtp}};
}

std::optional<std::string> LlamaCppServer::upstream_path(ApiRoute route) const {
  if (route == ApiRoute::kReranking) {
    return "/v1/rerank";
  }
  if (route == ApiRoute::kTokenize) {
    return "/tokenize";
  }
  return openai_path(route, {ApiRoute::kChatCompletions, ApiRoute::kCompletions,
                             ApiRoute::kResponses, ApiRoute::kEmbeddings});
}

std::vector<std::pair<std::string, std::string>> LlamaCppServer::child_env(
    const std::string& executable) const {
  // Release builds ship their shared libraries (libllama, libggml-*, the
  // ROCm runtime) next to the binary; only the child is told where.
  auto env = release_env(executable);
  // No cross-origin answers: browsers reach models only through the router.
  // llama-server from b10015 reads these (an origin no page can
  // have, RFC 2606's .invalid, and no credentials); older ones ignore
  // variables they do not know, and answer every origin, behind the key.
  env.emplace_back("LLAMA_ARG_CORS_ORIGINS", "http://backend-of-lemonade-router.invalid");
  env.emplace_back("LLAMA_ARG_CORS_CREDENTIALS", "false");
  // Router child mode: state lines on stdout, stop on stdin's command.
  env.emplace_back("LLAMA_SERVER_ROUTER_PORT", std::to_string(environment().router_port));
  return env;
}

std::vector<std::pair<std::string, std::string>> LlamaCppServer::secret_env() const {
  // llama-server's --api-key, from the environment (common/arg.cpp).
  return {{"LLAMA_API_KEY", secret()}};
}

namespace {

// Counting a huge prompt's tokens takes llama-server a moment.
constexpr std::chrono::milliseconds kCountTimeout{30'000};

// A short call to the backend's own API (its slots, its tokenizer).
Result<nlohmann::json> backend_json(net::UpstreamClient& client, const std::string& method,
                                    const std::string& path, const std::string& body,
                                    std::chrono::milliseconds timeout) {
  auto reply = call_backend(client, method, path, body, timeout);
  if (!reply.ok()) {
    return std::move(reply).error();
  }
  if (reply->status != 200) {
    return Error(ErrorCode::kUpstreamProtocol, path + " answered " + std::to_string(reply->status));
  }
  auto j = nlohmann::json::parse(reply->body, nullptr, false);
  if (j.is_discarded()) {
    return Error(ErrorCode::kUpstreamProtocol, path + " answered something that is not JSON");
  }
  return j;
}

}  // namespace

bool LlamaCppServer::reports_work_in_progress() {
  // Asked from a request's wait: a server too busy or hung to answer in a
  // second is not reported as working.
  auto slots = backend_json(client(), "GET", "/slots", "", std::chrono::seconds(1));
  if (!slots.ok() || !slots->is_array()) {
    return false;
  }
  for (const auto& slot : *slots) {
    if (slot.is_object() && slot.value("is_processing", false)) {
      return true;
    }
  }
  return false;
}

std::optional<long long> LlamaCppServer::count_prompt_tokens(ApiRoute route,
                                                             const nlohmann::json& body) {
  // The prompt as the model sees it: a chat through its template.
  nlohmann::json prompt;
  if (route == ApiRoute::kChatCompletions) {
    auto applied = backend_json(client(), "POST", "/apply-template", body.dump(), kCountTimeout);
    if (!applied.ok() || !applied->contains("prompt")) {
      return std::nullopt;
    }
    prompt = (*applied)["prompt"];
  } else if (route == ApiRoute::kCompletions && body.contains("prompt")) {
    prompt = body["prompt"];
  } else {
    return std::nullopt;
  }
  // add_special as the completion path tokenizes (a BOS where the model
  // has one).
  auto tokens = backend_json(client(), "POST", "/tokenize",
                             nlohmann::json{{"content", prompt}, {"add_special", true}}.dump(),
                             kCountTimeout);
  if (!tokens.ok() || !tokens->contains("tokens") || !(*tokens)["tokens"].is_array()) {
    return std::nullopt;
  }
  return static_cast<long long>((*tokens)["tokens"].size());
}

bool LlamaCppServer::output_reports_out_of_memory(const std::vector<std::string>& lines) const {
  return ggml_output_reports_out_of_memory(lines);
}

}  // namespace lemon
