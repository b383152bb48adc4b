// Fake ryzenai-server (Lemonade's ONNX Runtime GenAI server for Ryzen AI NPUs):
// `-m <model_dir>` must hold genai_config.json; serves /health and the
// OpenAI-compatible chat/completions routes with plain usage statistics.
#include <cstdio>
#include <string>
#include <vector>

#include "fake_args.h"
#include "fake_openai.h"
#include "fake_runtime.h"
#include "fake_util.h"

namespace {

using fake::ArgKind;

std::string without_trailing_slash(std::string path) {
  while (path.size() > 1 && path.back() == '/') {
    path.pop_back();
  }
  return path;
}

std::string basename_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

int main(int argc, char** argv) {
  fake::init_runtime("ryzenai-server", argc, argv);
  fake::ParsedArgs args = fake::parse_args(std::vector<std::string>(argv + 1, argv + argc),
                                           {{{"-m", "--model"}, ArgKind::kValue},
                                            {{"--port"}, ArgKind::kInt},
                                            {{"--host"}, ArgKind::kValue},
                                            {{"--ctx-size", "-c"}, ArgKind::kInt},
                                            {{"--verbose", "-v"}, ArgKind::kFlag}},
                                           {"Error: unknown argument: ", false});
  fake::Runtime& rt = fake::runtime();
  if (!args.has("-m")) {
    std::fprintf(stderr, "Error: -m <model_dir> is required\n");
    return 1;
  }
  rt.model = without_trailing_slash(args.get("-m"));
  rt.host = args.get("--host", "127.0.0.1");
  rt.port = args.get_int("--port", 8080);
  rt.knobs = fake::load_knobs(rt.model + ".fake.json");
  fake::apply_exit_at_start();
  if (!rt.knobs.ignore_model_check && !fake::is_regular_file(rt.model + "/genai_config.json")) {
    std::fprintf(stderr, "Error: failed to load model: %s/genai_config.json not found\n",
                 rt.model.c_str());
    return 1;
  }
  fake::OpenAiOptions openai{fake::StatsStyle::kUsageOnly, basename_of(rt.model), "ryzenai"};
  httplib::Server svr;
  svr.Get("/health", fake::health_handler);
  fake::get_routes(svr, {"/models", "/v1/models"}, fake::models_handler(openai, ""));
  fake::post_routes(svr, {"/chat/completions", "/v1/chat/completions"},
                    fake::chat_completions_handler(openai));
  fake::post_routes(svr, {"/completions", "/v1/completions"}, fake::completions_handler(openai));
  fake::serve(svr, {"[RyzenAI] Loading model from " + rt.model,
                    "[RyzenAI] Context size: " + std::to_string(args.get_int("--ctx-size", 2048))});
}
