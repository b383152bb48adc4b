// Fake sd-server (stable-diffusion.cpp's HTTP server): GET / for readiness,
// GET /v1/models, POST /v1/images/generations (JSON) and /v1/images/edits
// (multipart) returning small valid PNGs (base64) whose colour is derived from
// the prompt, seed and image index.
//
// As the real program (examples/server/main.cpp at 1f30df9, checked by the
// `real` tier): `n` is clamped to 1..8 without an error, a `size` it cannot
// read leaves the default, `response_format` is not read, the errors are
// {"error":"prompt required"} and {"error":"at least one image[] required"},
// and SIGTERM kills it (no handler: "killed by signal 15").
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fake_args.h"
#include "fake_png.h"
#include "fake_reply.h"
#include "fake_request.h"
#include "fake_runtime.h"
#include "fake_util.h"

namespace {

using fake::ArgKind;
using fake::json;

const std::vector<fake::ArgSpec>& sd_args() {
  static const std::vector<fake::ArgSpec> kSpecs = {
      {{"--listen-port"}, ArgKind::kInt},
      {{"--listen-ip"}, ArgKind::kValue},
      {{"-m", "--model"}, ArgKind::kValue},
      {{"--diffusion-model"}, ArgKind::kValue},
      {{"--llm"}, ArgKind::kValue},
      {{"--vae"}, ArgKind::kValue},
      {{"--clip_l"}, ArgKind::kValue},
      {{"--clip_g"}, ArgKind::kValue},
      {{"--t5xxl"}, ArgKind::kValue},
      {{"--taesd"}, ArgKind::kValue},
      {{"--lora-model-dir"}, ArgKind::kValue},
      {{"-v", "--verbose"}, ArgKind::kFlag},
      {{"--steps"}, ArgKind::kInt},
      {{"--cfg-scale"}, ArgKind::kValue},
      {{"-W", "--width"}, ArgKind::kInt},
      {{"-H", "--height"}, ArgKind::kInt},
      {{"-s", "--seed"}, ArgKind::kInt},
      {{"-t", "--threads"}, ArgKind::kInt},
      {{"--sampling-method"}, ArgKind::kValue},
      {{"--scheduler"}, ArgKind::kValue},
      {{"--type"}, ArgKind::kValue},
      {{"--offload-to-cpu"}, ArgKind::kFlag},
      {{"--diffusion-fa"}, ArgKind::kFlag},
      {{"--vae-tiling"}, ArgKind::kFlag},
      {{"--vae-on-cpu"}, ArgKind::kFlag},
      {{"--clip-on-cpu"}, ArgKind::kFlag},
  };
  return kSpecs;
}

struct Defaults {
  int width = 512;
  int height = 512;
};

void reply_sd_error(const fake::JobPtr& job, httplib::Response& res, const std::string& message) {
  fake::reply_now(job, res, 400, fake::dump({{"error", message}}));
}

bool parse_size(const std::string& size, int* w, int* h) {
  size_t x = size.find('x');
  if (x == std::string::npos) {
    return false;
  }
  try {
    *w = std::stoi(size.substr(0, x));
    *h = std::stoi(size.substr(x + 1));
  } catch (const std::exception&) {
    return false;
  }
  return *w > 0 && *h > 0 && *w <= 8192 && *h <= 8192;
}

// The PNG side length: the requested one scaled down 64x, clamped to [1, 64].
int thumb(int side) {
  return side / 64 < 1 ? 1 : (side / 64 > 64 ? 64 : side / 64);
}

void generations_handler(const Defaults& defaults, const httplib::Request& req,
                         httplib::Response& res) {
  fake::JobPtr job = fake::admit(res);
  json body;
  if (!job || !fake::parse_json_body(job, req, res, &body)) {
    return;
  }
  if (!body.contains("prompt") || !body["prompt"].is_string() ||
      body["prompt"].get<std::string>().empty()) {
    reply_sd_error(job, res, "prompt required");
    return;
  }
  int n = body.contains("n") && body["n"].is_number_integer() ? body["n"].get<int>() : 1;
  n = std::clamp(n, 1, 8);
  int w = defaults.width;
  int h = defaults.height;
  if (body.contains("size") && body["size"].is_string() &&
      !parse_size(body["size"].get<std::string>(), &w, &h)) {
    w = defaults.width;
    h = defaults.height;
  }
  std::string seed = body.contains("seed") ? fake::dump(body["seed"]) : "-1";
  json data = json::array();
  for (int i = 0; i < n; ++i) {
    uint64_t colour =
        fake::fnv1a(body["prompt"].get<std::string>() + "|" + seed + "|" + std::to_string(i));
    data.push_back({{"b64_json", fake::base64_encode(fake::make_png(thumb(w), thumb(h), colour))}});
  }
  json out = {{"created", fake::unix_seconds()}, {"data", data}, {"output_format", "png"}};
  fake::reply_later(job, res, fake::request_params(fake::runtime().knobs, body), 0,
                    fake::dump(out));
}

// POST /v1/images/edits: a multipart form of prompt, n, size, one or more
// image[] files and an optional mask (what the router sends for OpenAI's
// images/edits and images/variations); the reply is a generation's.
void edits_handler(const Defaults& defaults, const httplib::Request& req, httplib::Response& res) {
  fake::JobPtr job = fake::admit(res);
  if (!job) {
    return;
  }
  if (!req.is_multipart_form_data()) {
    reply_sd_error(job, res, "multipart/form-data expected");
    return;
  }
  auto text = [&](const char* name) {
    return req.has_file(name) ? req.get_file_value(name).content : std::string();
  };
  const std::string prompt = text("prompt");
  int images = 0;
  for (const auto& [name, file] : req.files) {
    images += name == "image[]" && !file.content.empty() ? 1 : 0;
  }
  fake::remember_request({{"prompt", prompt},
                          {"n", text("n")},
                          {"size", text("size")},
                          {"images", images},
                          {"mask", req.has_file("mask")}});
  if (prompt.empty()) {
    reply_sd_error(job, res, "prompt required");
    return;
  }
  if (images == 0) {
    reply_sd_error(job, res, "at least one image[] required");
    return;
  }
  const int n = std::clamp(text("n").empty() ? 1 : std::atoi(text("n").c_str()), 1, 8);
  int w = defaults.width;
  int h = defaults.height;
  if (!text("size").empty() && !parse_size(text("size"), &w, &h)) {
    w = defaults.width;
    h = defaults.height;
  }
  json data = json::array();
  for (int i = 0; i < n; ++i) {
    uint64_t colour = fake::fnv1a(prompt + "|edit|" + std::to_string(i));
    data.push_back({{"b64_json", fake::base64_encode(fake::make_png(thumb(w), thumb(h), colour))}});
  }
  json out = {{"created", fake::unix_seconds()}, {"data", data}, {"output_format", "png"}};
  fake::reply_later(job, res, fake::request_params(fake::runtime().knobs, json::object()), 0,
                    fake::dump(out));
}

void root_handler(const httplib::Request&, httplib::Response& res) {
  if (!fake::is_ready()) {
    res.status = 503;
    res.set_content("Model is loading", "text/plain");
    return;
  }
  res.set_content("Stable Diffusion Server is running", "text/plain");
}

}  // namespace

int main(int argc, char** argv) {
  fake::init_runtime("sd-server", argc, argv);
  fake::ParsedArgs args = fake::parse_args(std::vector<std::string>(argv + 1, argv + argc),
                                           sd_args(), {"error: unknown argument: ", false});
  fake::Runtime& rt = fake::runtime();
  rt.sigterm_kills = true;
  rt.model = args.has("-m") ? args.get("-m") : args.get("--diffusion-model");
  rt.host = args.get("--listen-ip", "127.0.0.1");
  rt.port = args.get_int("--listen-port", 1234);
  if (rt.model.empty()) {
    std::fprintf(stderr,
                 "error: the following arguments are required: model_path/diffusion_model\n");
    return 1;
  }
  rt.knobs = fake::load_knobs(rt.model + ".fake.json");
  fake::apply_exit_at_start();
  if (!rt.knobs.ignore_model_check) {
    for (const char* key : {"-m", "--diffusion-model", "--llm", "--vae", "--clip_l", "--clip_g",
                            "--t5xxl", "--taesd"}) {
      if (args.has(key) && !fake::is_regular_file(args.get(key))) {
        std::fprintf(stderr, "[ERROR] model_loader: failed to open '%s'\n", args.get(key).c_str());
        std::fprintf(stderr, "[ERROR] new_sd_ctx failed\n");
        return 1;
      }
    }
  }
  Defaults defaults{args.get_int("-W", 512), args.get_int("-H", 512)};
  httplib::Server svr;
  svr.Get("/", root_handler);  // sd-server has no /health
  svr.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"data":[{"id":"sd-cpp-local","object":"model","owned_by":"local"}]})",
                    "application/json");
  });
  svr.Post("/v1/images/generations",
           [defaults](const httplib::Request& req, httplib::Response& res) {
             generations_handler(defaults, req, res);
           });
  svr.Post("/v1/images/edits", [defaults](const httplib::Request& req, httplib::Response& res) {
    edits_handler(defaults, req, res);
  });
  fake::serve(svr, {"[INFO ] loading model from '" + rt.model + "'",
                    "[INFO ] listening on: {host}:{port}"});
}
