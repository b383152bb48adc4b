// Fake FastFlowLM CLI (`flm`): `flm serve <checkpoint>` runs an OpenAI-
// compatible server with FLM-style usage statistics and an Ollama-style
// GET /api/tags readiness route; `flm list` and `flm version` answer like the
// real CLI. Installed checkpoints come from LEMON_FAKE_FLM_INSTALLED.
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "fake_args.h"
#include "fake_embed.h"
#include "fake_openai.h"
#include "fake_runtime.h"
#include "fake_util.h"

namespace {

using fake::ArgKind;
using fake::ArgSpec;

constexpr const char* kVersion = "FLM v0.9.34";

// Installed checkpoints, or an empty list when every checkpoint counts as installed.
std::vector<std::string> installed_list() {
  std::vector<std::string> out;
  std::stringstream in(fake::env_or_empty("LEMON_FAKE_FLM_INSTALLED"));
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t b = item.find_first_not_of(" \t");
    size_t e = item.find_last_not_of(" \t");
    if (b != std::string::npos) {
      out.push_back(item.substr(b, e - b + 1));
    }
  }
  return out;
}

bool is_installed(const std::string& checkpoint) {
  if (fake::env_or_empty("LEMON_FAKE_FLM_INSTALLED").empty()) {
    return true;
  }
  for (const std::string& name : installed_list()) {
    if (name == checkpoint) {
      return true;
    }
  }
  return false;
}

int cmd_list(const std::vector<std::string>& rest) {
  fake::ParsedArgs args =
      fake::parse_args(rest, {{{"--filter"}, ArgKind::kValue}, {{"--quiet", "-q"}, ArgKind::kFlag}},
                       {"Error: unknown option: ", false});
  std::string filter = args.get("--filter", "all");
  bool quiet = args.has("--quiet");
  if (!quiet) {
    std::printf("Models:\n");
  }
  if (filter == "not-installed") {
    return 0;
  }
  for (const std::string& name : installed_list()) {
    std::printf(quiet ? "%s\n" : "  - %s\n", name.c_str());
  }
  return 0;
}

int cmd_pull(const std::vector<std::string>& rest) {
  fake::ParsedArgs args =
      fake::parse_args(rest, {{{"--force"}, ArgKind::kFlag}}, {"Error: unknown option: ", true});
  if (args.positional().size() != 1) {
    std::fprintf(stderr, "Error: usage: flm pull <model>\n");
    return 1;
  }
  std::printf("Pulling %s ... done\n", args.positional()[0].c_str());
  return 0;
}

std::string sidecar_path(const std::string& checkpoint) {
  std::string dir = fake::env_or_empty("LEMON_FAKE_FLM_CONFIG_DIR");
  if (dir.empty()) {
    return "";
  }
  std::string name = checkpoint;
  for (char& c : name) {
    c = c == ':' ? '_' : c;
  }
  return dir + "/" + name + ".fake.json";
}

void tags_handler(const httplib::Request&, httplib::Response& res) {
  if (!fake::is_ready()) {
    fake::reply_loading(res);
    return;
  }
  const std::string& ckpt = fake::runtime().model;
  fake::json tags = {{"models", fake::json::array({{{"name", ckpt}, {"model", ckpt}}})}};
  res.set_content(fake::dump(tags), "application/json");
}

int cmd_serve(const std::vector<std::string>& rest) {
  static const std::vector<ArgSpec> kSpecs = {
      {{"--ctx-len", "-c"}, ArgKind::kInt}, {{"--port", "-p"}, ArgKind::kInt},
      {{"--host"}, ArgKind::kValue},        {{"--quiet", "-q"}, ArgKind::kFlag},
      {{"--pmode"}, ArgKind::kValue},       {{"--socket"}, ArgKind::kInt},
      {{"--q-len"}, ArgKind::kInt},         {{"--embed"}, ArgKind::kInt},
      {{"--asr"}, ArgKind::kInt},           {{"--cors"}, ArgKind::kInt},
  };
  fake::ParsedArgs args = fake::parse_args(rest, kSpecs, {"Error: unknown option: ", true});
  if (args.positional().size() != 1) {
    std::fprintf(stderr, "Error: usage: flm serve <model> [--ctx-len N] [--port P]\n");
    return 1;
  }
  fake::Runtime& rt = fake::runtime();
  rt.model = args.positional()[0];
  rt.host = args.get("--host", "127.0.0.1");
  rt.port = args.get_int("--port", 52625);
  rt.knobs = fake::load_knobs(sidecar_path(rt.model));
  fake::apply_exit_at_start();
  if (!rt.knobs.ignore_model_check && !is_installed(rt.model)) {
    std::fprintf(stderr, "Error: model %s not found\n", rt.model.c_str());
    return 1;
  }
  fake::OpenAiOptions openai{fake::StatsStyle::kFlm, rt.model, "flm"};
  httplib::Server svr;
  svr.Get("/api/tags", tags_handler);
  svr.Get("/v1/models", fake::models_handler(openai, ""));
  svr.Post("/v1/chat/completions", fake::chat_completions_handler(openai));
  svr.Post("/v1/completions", fake::completions_handler(openai));
  svr.Post("/v1/embeddings", fake::embeddings_handler(rt.model, true));
  fake::serve(svr, {std::string("[FLM] ") + kVersion, "[FLM] Loading model: " + rt.model,
                    "[FLM] Context length: " + std::to_string(args.get_int("--ctx-len", 4096)),
                    "[FLM] Server listening on http://{host}:{port}"});
}

}  // namespace

int main(int argc, char** argv) {
  fake::init_runtime("flm", argc, argv);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fprintf(stderr, "Usage: flm <serve|list|pull|version> [options]\n");
    return 1;
  }
  std::string cmd = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (cmd == "version" || cmd == "--version" || cmd == "-v") {
    std::printf("%s\n", kVersion);
    return 0;
  }
  if (cmd == "list") {
    return cmd_list(rest);
  }
  if (cmd == "pull") {
    return cmd_pull(rest);
  }
  if (cmd == "serve") {
    return cmd_serve(rest);
  }
  std::fprintf(stderr, "Error: unknown command '%s'\n", cmd.c_str());
  return 1;
}
