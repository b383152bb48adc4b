// Fake llama-server (llama.cpp's HTTP server): same command line, the
// OpenAI-compatible routes plus /health, /props, /v1/models, embeddings,
// reranking and the Responses API, driven by the knobs in README.md.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "fake_args.h"
#include "fake_child_mode.h"
#include "fake_embed.h"
#include "fake_openai.h"
#include "fake_responses.h"
#include "fake_runtime.h"
#include "fake_slots.h"
#include "fake_util.h"

namespace {

using fake::ArgKind;
using fake::ArgSpec;

const std::vector<ArgSpec>& llama_args() {
  static const std::vector<ArgSpec> kSpecs = {
      {{"-m", "--model"}, ArgKind::kValue},
      {{"-c", "--ctx-size"}, ArgKind::kInt},
      {{"--port"}, ArgKind::kInt},
      {{"--host"}, ArgKind::kValue},
      {{"--jinja"}, ArgKind::kFlag},
      {{"--no-jinja"}, ArgKind::kFlag},
      {{"--mmproj"}, ArgKind::kValue},
      {{"--no-mmproj-offload"}, ArgKind::kFlag},
      {{"--context-shift"}, ArgKind::kFlag},
      {{"--keep"}, ArgKind::kInt},
      {{"--reasoning-format"}, ArgKind::kValue},
      {{"--no-webui"}, ArgKind::kFlag},
      {{"--no-mmap"}, ArgKind::kFlag},
      {{"--embeddings", "--embedding"}, ArgKind::kFlag},
      {{"--reranking", "--rerank"}, ArgKind::kFlag},
      {{"-ngl", "--gpu-layers", "--n-gpu-layers"}, ArgKind::kInt},
      {{"-np", "--parallel"}, ArgKind::kInt},
      {{"-t", "--threads"}, ArgKind::kInt},
      {{"-b", "--batch-size"}, ArgKind::kInt},
      {{"-ub", "--ubatch-size"}, ArgKind::kInt},
      {{"-fa", "--flash-attn"}, ArgKind::kOptionalValue, {"on", "off", "auto"}},
      {{"-kvu", "--kv-unified"}, ArgKind::kFlag},
      {{"--cache-type-k"}, ArgKind::kValue},
      {{"--cache-type-v"}, ArgKind::kValue},
      {{"--temp"}, ArgKind::kValue},
      {{"--alias"}, ArgKind::kValue},
      {{"--slot-save-path"}, ArgKind::kValue},
      {{"--api-key"}, ArgKind::kValue},
      {{"--log-verbose"}, ArgKind::kFlag},
      {{"-v", "--verbose"}, ArgKind::kFlag},
      {{"--no-warmup"}, ArgKind::kFlag},
      {{"--seed"}, ArgKind::kInt},
      {{"--chat-template"}, ArgKind::kValue},
      {{"--version"}, ArgKind::kFlag},
      {{"--help", "-h"}, ArgKind::kFlag},
      {{"--sse-ping-interval"}, ArgKind::kInt},
      // Speculative decoding: the names a current llama-server takes
      // (common/arg.cpp), each option keyed by a name older releases know
      // too. The removed --draft-max/--draft/--draft-n are refused.
      {{"-md", "--model-draft", "--spec-draft-model"}, ArgKind::kValue},
      {{"--spec-type"}, ArgKind::kValue},
      {{"--spec-draft-n-max"}, ArgKind::kInt},
      {{"--spec-draft-n-min"}, ArgKind::kInt},
      {{"--draft-p-min", "--spec-draft-p-min"}, ArgKind::kValue},
      {{"-ngld", "--gpu-layers-draft", "--n-gpu-layers-draft", "--spec-draft-ngl"},
       ArgKind::kValue},
      {{"--metrics"}, ArgKind::kFlag},
      {{"--slots"}, ArgKind::kFlag},
      {{"--no-slots"}, ArgKind::kFlag},
      {{"--sleep-idle-seconds"}, ArgKind::kInt},
  };
  return kSpecs;
}

const std::vector<std::string> kSpecTypes = {
    "none",         "draft-simple", "draft-eagle3",  "draft-mtp", "draft-dflash", "draft-dspark",
    "ngram-simple", "ngram-map-k",  "ngram-map-k4v", "ngram-mod", "ngram-cache"};

bool listed(const std::vector<std::string>& list, const std::string& word) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

// What this fake knows: all of llama_args() and kSpecTypes but the
// unknown_flags knob's names (an older llama-server: the pinned b8175 has
// --spec-type with n-gram types only, and -md drafts by itself there). An
// option's key is a name every release knows.
struct KnownArgs {
  std::vector<ArgSpec> specs;
  std::vector<std::string> spec_types;
};
KnownArgs known_args(const std::vector<std::string>& unknown) {
  KnownArgs known;
  for (ArgSpec spec : llama_args()) {
    std::erase_if(spec.names, [&](const std::string& n) { return listed(unknown, n); });
    if (!spec.names.empty()) {
      known.specs.push_back(std::move(spec));
    }
  }
  for (const auto& type : kSpecTypes) {
    if (!listed(unknown, type)) {
      known.spec_types.push_back(type);
    }
  }
  return known;
}

// llama-server's --help: one line per option, its names first, and
// --spec-type's types as a comma-separated list.
void print_help(const KnownArgs& known) {
  std::printf("----- common params -----\n\n");
  std::string types;
  for (const auto& t : known.spec_types) {
    types += (types.empty() ? "" : ",") + t;
  }
  for (const ArgSpec& spec : known.specs) {
    std::string names;
    for (const std::string& n : spec.names) {
      names += (names.empty() ? "" : ", ") + n;
    }
    std::string value = spec.kind == ArgKind::kInt     ? " N"
                        : spec.kind == ArgKind::kValue ? " X"
                                                       : "";
    if (spec.names.front() == "--spec-type") {
      value = " " + types;
    }
    std::printf("%-40s (fake)\n", (names + value).c_str());
  }
}

[[noreturn]] void model_load_failure(const std::string& path) {
  std::fprintf(stderr, "llama_model_load: error loading model: failed to open %s\n", path.c_str());
  std::fprintf(stderr, "main: exiting due to model loading failure\n");
  std::exit(1);
}

// Like llama-server with --api-key or LLAMA_API_KEY (tools/server/
// server-http.cpp at b8175, lines 127-176): OPTIONS is answered without the
// key, health, models and / are public (and the fake's /fake/state); every
// other route needs the key in "Authorization" (with or without "Bearer ")
// or, without that header, "X-Api-Key", else 401.
void require_api_key(httplib::Server& svr, const std::string& key) {
  svr.set_pre_routing_handler([key](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "OPTIONS") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    static const std::vector<std::string> kPublic = {"/health",     "/v1/health",   "/models",
                                                     "/v1/models",  "/api/tags",    "/",
                                                     "/fake/state", "/fake/release"};
    for (const std::string& p : kPublic) {
      if (req.path == p) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
    }
    std::string given = req.has_header("Authorization") ? req.get_header_value("Authorization")
                                                        : req.get_header_value("X-Api-Key");
    if (given.rfind("Bearer ", 0) == 0) {
      given = given.substr(7);
    }
    if (!key.empty() && given == key) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.status = 401;
    res.set_content(fake::llama_error_json(401, "Invalid API Key", "authentication_error"),
                    "application/json");
    return httplib::Server::HandlerResponse::Handled;
  });
}

std::string props_json(const fake::ParsedArgs& args, int n_ctx, int slots) {
  fake::json props = {
      {"default_generation_settings", {{"n_ctx", n_ctx}, {"params", {{"n_predict", -1}}}}},
      {"model_path", fake::runtime().model},
      {"total_slots", slots},
      {"chat_template", args.has("--chat-template") ? args.get("--chat-template") : "chatml"},
      {"modalities", {{"vision", args.has("--mmproj")}, {"audio", false}}},
      {"build_info", "b6000-fake"}};
  return fake::dump(props);
}

}  // namespace

int main(int argc, char** argv) {
  fake::init_runtime("llama-server", argc, argv);
  // The unknown_flags knob decides what the command line may hold, so it is
  // read (from LEMON_FAKE_CONFIG) before the arguments.
  const KnownArgs known = known_args(fake::load_knobs("").unknown_flags);
  fake::ParsedArgs args =
      fake::parse_args(std::vector<std::string>(argv + 1, argv + argc), known.specs);
  if (args.has("--help")) {
    print_help(known);
    return 0;
  }
  if (args.has("--version")) {
    std::fprintf(stderr, "version: 6000 (fake0000)\nbuilt with c++ for x86_64-linux-gnu\n");
    return 0;
  }
  if (args.has("--slot-save-path") &&
      !std::filesystem::is_directory(args.get("--slot-save-path"))) {
    // llama-server checks it while parsing its arguments.
    std::fprintf(stderr,
                 "error while handling argument \"--slot-save-path\": not a directory: %s\n",
                 args.get("--slot-save-path").c_str());
    return 1;
  }
  fake::Runtime& rt = fake::runtime();
  rt.model = args.get("-m", "models/7B/ggml-model-f16.gguf");
  rt.host = args.get("--host", "127.0.0.1");
  rt.port = args.get_int("--port", 8080);
  rt.sse_ping_interval_s = args.get_int("--sse-ping-interval", 30);
  rt.knobs = fake::load_knobs(rt.model + ".fake.json");
  fake::apply_exit_at_start();
  fake::apply_oom_at_start(rt.model);
  if (!rt.knobs.ignore_model_check) {
    if (!fake::is_regular_file(rt.model)) {
      model_load_failure(rt.model);
    }
    if (args.has("--mmproj") && !fake::is_regular_file(args.get("--mmproj"))) {
      model_load_failure(args.get("--mmproj"));
    }
    if (args.has("-md") && !fake::is_regular_file(args.get("-md"))) {
      model_load_failure(args.get("-md"));
    }
  }
  // --spec-type: a comma-separated list of known types (llama-server
  // refuses an unknown one while parsing).
  const std::string spec_type = args.get("--spec-type", "none");
  std::vector<std::string> types;
  for (std::size_t at = 0; at <= spec_type.size();) {
    const std::size_t comma = std::min(spec_type.find(',', at), spec_type.size());
    types.push_back(spec_type.substr(at, comma - at));
    if (!listed(known.spec_types, types.back())) {
      std::fprintf(stderr, "error while handling argument \"--spec-type\": unknown type: %s\n",
                   types.back().c_str());
      return 1;
    }
    at = comma + 1;
  }
  // A current llama-server drafts with a draft model only when a draft
  // type says so (or the draft GGUF holds MTP heads, which no test file
  // does); one from before the draft types, with any -md.
  const bool has_draft = args.has("-md");
  const bool draft_types = listed(known.spec_types, "draft-simple");
  const bool speculative =
      listed(types, "draft-mtp") ||
      (has_draft &&
       (!draft_types || listed(types, "draft-simple") || listed(types, "draft-eagle3") ||
        listed(types, "draft-dflash") || listed(types, "draft-dspark")));
  int n_ctx = args.get_int("-c", 0) > 0 ? args.get_int("-c", 0) : 4096;
  // --parallel auto (the default) means 4 slots sharing one unified cache.
  const bool auto_slots = args.get_int("-np", -1) <= 0;
  int slots = auto_slots ? 4 : args.get_int("-np", 0);
  fake::configure_slots({slots, n_ctx, auto_slots || args.has("-kvu")});
  std::string model_id = args.get("--alias", rt.model);

  fake::OpenAiOptions openai{fake::StatsStyle::kLlama, model_id, "llamacpp", speculative};
  std::string meta = fake::dump(fake::json{{"vocab_type", 2},
                                           {"n_vocab", 32000},
                                           {"n_ctx_train", n_ctx},
                                           {"n_embd", fake::kEmbeddingDim},
                                           {"n_params", 1000000},
                                           {"size", 1000000}});
  std::string props = props_json(args, n_ctx, slots);
  if (fake::child_mode_requested() && rt.knobs.child_mode) {
    // The ready line's payload is the model's /v1/models entry.
    fake::enable_child_mode({{"id", model_id},
                             {"aliases", fake::json::array({model_id})},
                             {"tags", fake::json::array()},
                             {"object", "model"},
                             {"created", 1700000000},
                             {"owned_by", "llamacpp"},
                             {"meta", fake::json::parse(meta)}},
                            args.has("--mmproj"));
  }

  httplib::Server svr;
  // The flag, else the environment (common/arg.cpp: --api-key's env is
  // LLAMA_API_KEY).
  const char* env_key = std::getenv("LLAMA_API_KEY");
  if (args.has("--api-key")) {
    require_api_key(svr, args.get("--api-key"));
  } else if (env_key != nullptr && *env_key != '\0') {
    require_api_key(svr, env_key);
  }
  fake::get_routes(svr, {"/health", "/v1/health"}, fake::health_handler);
  fake::get_routes(svr, {"/models", "/v1/models"}, fake::models_handler(openai, meta));
  svr.Get("/props", [props](const httplib::Request&, httplib::Response& res) {
    res.set_content(props, "application/json");
  });
  svr.Get("/slots", [no_slots = args.has("--no-slots")](const httplib::Request&,
                                                        httplib::Response& res) {
    if (no_slots) {
      res.status = 501;
      res.set_content(fake::llama_error_json(501, "This server does not support slots endpoint.",
                                             "not_supported_error"),
                      "application/json");
      return;
    }
    res.set_content(fake::dump(fake::slots_json()), "application/json");
  });
  // llama-server's Prometheus text, only with --metrics.
  svr.Get("/metrics", [metrics = args.has("--metrics")](const httplib::Request&,
                                                        httplib::Response& res) {
    if (!metrics) {
      res.status = 501;
      res.set_content(
          fake::llama_error_json(
              501, "This server does not support metrics endpoint. Start it with `--metrics`",
              "not_supported_error"),
          "application/json");
      return;
    }
    const fake::Runtime& r = fake::runtime();
    res.set_content(
        "# HELP llamacpp:requests_processing Number of requests processing.\n"
        "# TYPE llamacpp:requests_processing gauge\n"
        "llamacpp:requests_processing " +
            std::to_string(r.counters.active.load()) + "\n",
        "text/plain; version=0.0.4");
  });
  // POST /slots/{id}?action=erase|save|restore, as llama-server: every
  // action needs --slot-save-path (501 without it).
  const std::string slot_dir = args.get("--slot-save-path", "");
  svr.Post(R"(/slots/(\d{1,6}))", [slot_dir](const httplib::Request& req, httplib::Response& res) {
    if (slot_dir.empty()) {
      res.status = 501;
      res.set_content(
          fake::llama_error_json(
              501, "This server does not support slots action. Start it with `--slot-save-path`",
              "not_supported_error"),
          "application/json");
      return;
    }
    const std::string action = req.get_param_value("action");
    if (action == "save" || action == "restore") {
      const auto body = fake::json::parse(req.body, nullptr, false);
      const std::string filename =
          body.is_object() && body.value("filename", fake::json()).is_string()
              ? body["filename"].get<std::string>()
              : std::string();
      const int id = std::stoi(req.matches[1].str());
      if (action == "restore" && fake::runtime().knobs.slot_restore_gate && !fake::wait_at_gate()) {
        res.status = 503;
        return;
      }
      const auto reply = action == "save" ? fake::save_slot(id, slot_dir, filename)
                                          : fake::restore_slot(id, slot_dir, filename);
      res.status = reply.status;
      res.set_content(reply.body, "application/json");
      return;
    }
    if (action != "erase") {
      res.status = 400;
      res.set_content(fake::llama_error_json(400, "Invalid action", "invalid_request_error"),
                      "application/json");
      return;
    }
    const int id = std::stoi(req.matches[1].str());
    auto erased = fake::erase_slot(id);
    if (!erased) {
      res.status = 400;
      res.set_content(fake::llama_error_json(400, "Invalid slot ID", "invalid_request_error"),
                      "application/json");
      return;
    }
    res.set_content(fake::dump(fake::json{{"id_slot", id}, {"n_erased", *erased}}),
                    "application/json");
  });
  fake::post_routes(svr, {"/chat/completions", "/v1/chat/completions"},
                    fake::chat_completions_handler(openai));
  // /completion and /infill (llama.cpp's own) are answered as /completions.
  fake::post_routes(svr, {"/completion", "/completions", "/v1/completions", "/infill"},
                    fake::completions_handler(openai));
  fake::post_routes(svr, {"/embedding", "/embeddings", "/v1/embeddings"},
                    fake::embeddings_handler(model_id, args.has("--embeddings")));
  fake::post_routes(svr, {"/rerank", "/reranking", "/v1/rerank", "/v1/reranking"},
                    fake::rerank_handler(model_id, args.has("--reranking")));
  fake::post_routes(svr, {"/responses", "/v1/responses"}, fake::responses_handler(model_id));
  fake::post_routes(svr, {"/tokenize"}, fake::tokenize_handler());
  fake::post_routes(svr, {"/apply-template"}, fake::apply_template_handler());
  // The words of /tokenize's numbering back, one "w<token>" per token.
  svr.Post("/detokenize", [](const httplib::Request& req, httplib::Response& res) {
    const auto body = fake::json::parse(req.body, nullptr, false);
    std::string content;
    if (body.is_object() && body.contains("tokens") && body["tokens"].is_array()) {
      for (const auto& t : body["tokens"]) {
        content += (content.empty() ? "w" : " w") + t.dump();
      }
    }
    res.set_content(fake::dump(fake::json{{"content", content}}), "application/json");
  });

  fake::serve(svr, {"build: 6000 (fake0000) with c++ for x86_64-linux-gnu",
                    "llama_model_loader: loaded meta data from " + rt.model,
                    "llama_context: n_ctx = " + std::to_string(n_ctx),
                    "srv    load_model: loading model '" + rt.model + "'"});
}
