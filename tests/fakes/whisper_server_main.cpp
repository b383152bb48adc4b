// Fake whisper-server (whisper.cpp's HTTP server): POST /inference takes a
// multipart upload and returns a deterministic transcript of it in the
// requested response_format; POST /load and GET /health as in the real one.
#include <cstdio>
#include <string>
#include <vector>

#include "fake_args.h"
#include "fake_reply.h"
#include "fake_runtime.h"
#include "fake_util.h"

namespace {

using fake::ArgKind;
using fake::json;

std::string form_field(const httplib::Request& req, const char* name, const std::string& fallback) {
  return req.has_file(name) ? req.get_file_value(name).content : fallback;
}

// "00:00:01,250" (srt) or "00:00:01.250" (vtt).
std::string timestamp(double seconds, char separator) {
  long ms = static_cast<long>(seconds * 1000.0 + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%02ld:%02ld:%02ld%c%03ld", ms / 3600000, (ms / 60000) % 60,
                (ms / 1000) % 60, separator, ms % 1000);
  return buf;
}

struct Transcript {
  std::string text;
  std::string language;
  double duration = 0;
  double temperature = 0;
};

// Returns the body and sets `content_type` for the requested response_format.
std::string render(const Transcript& t, const std::string& format, std::string* content_type) {
  *content_type = "text/plain; charset=utf-8";
  if (format == "text") {
    return t.text + "\n";
  }
  if (format == "srt") {
    return "1\n" + timestamp(0, ',') + " --> " + timestamp(t.duration, ',') + "\n" + t.text +
           "\n\n";
  }
  if (format == "vtt") {
    return "WEBVTT\n\n" + timestamp(0, '.') + " --> " + timestamp(t.duration, '.') + "\n" + t.text +
           "\n\n";
  }
  *content_type = "application/json";
  if (format == "verbose_json") {
    json segment = {{"id", 0},
                    {"seek", 0},
                    {"start", 0.0},
                    {"end", t.duration},
                    {"text", t.text},
                    {"tokens", json::array()},
                    {"temperature", t.temperature},
                    {"avg_logprob", -0.25},
                    {"compression_ratio", 1.0},
                    {"no_speech_prob", 0.01}};
    return fake::dump({{"task", "transcribe"},
                       {"language", t.language},
                       {"duration", t.duration},
                       {"text", t.text},
                       {"segments", json::array({segment})}});
  }
  return fake::dump({{"text", t.text}});
}

void inference_handler(const std::string& default_language, const httplib::Request& req,
                       httplib::Response& res) {
  fake::JobPtr job = fake::admit(res);
  if (!job) {
    return;
  }
  if (!req.has_file("file")) {
    fake::reply_now(job, res, 400, R"({"error":"no 'file' field in the request"})");
    return;
  }
  httplib::MultipartFormData file = req.get_file_value("file");
  Transcript t;
  t.text = "fake transcript of " + std::to_string(file.content.size()) + " bytes from " +
           (file.filename.empty() ? std::string("upload") : file.filename);
  t.language = form_field(req, "language", default_language);
  t.duration =
      file.content.size() > 44 ? static_cast<double>(file.content.size() - 44) / 32000.0 : 0.0;
  t.temperature = std::atof(form_field(req, "temperature", "0").c_str());
  std::string content_type;
  std::string body = render(t, form_field(req, "response_format", "json"), &content_type);
  json overrides = json::parse(form_field(req, "lemon_fake", "{}"), nullptr, false);
  json knob_body = {{"lemon_fake", overrides.is_object() ? overrides : json::object()}};
  fake::reply_later(job, res, fake::request_params(fake::runtime().knobs, knob_body), 0, body,
                    content_type);
}

}  // namespace

int main(int argc, char** argv) {
  fake::init_runtime("whisper-server", argc, argv);
  fake::ParsedArgs args = fake::parse_args(std::vector<std::string>(argv + 1, argv + argc),
                                           {{{"-m", "--model"}, ArgKind::kValue},
                                            {{"--port"}, ArgKind::kInt},
                                            {{"--host"}, ArgKind::kValue},
                                            {{"-t", "--threads"}, ArgKind::kInt},
                                            {{"-p", "--processors"}, ArgKind::kInt},
                                            {{"-l", "--language"}, ArgKind::kValue},
                                            {{"--prompt"}, ArgKind::kValue},
                                            {{"--convert"}, ArgKind::kFlag},
                                            {{"--inference-path"}, ArgKind::kValue},
                                            {{"--request-path"}, ArgKind::kValue},
                                            {{"--public"}, ArgKind::kValue},
                                            {{"-ng", "--no-gpu"}, ArgKind::kFlag},
                                            {{"-fa", "--flash-attn"}, ArgKind::kFlag},
                                            {{"-nfa", "--no-flash-attn"}, ArgKind::kFlag},
                                            {{"-tr", "--translate"}, ArgKind::kFlag},
                                            {{"-nt", "--no-timestamps"}, ArgKind::kFlag},
                                            {{"-debug", "--debug-mode"}, ArgKind::kFlag}},
                                           {"error: unknown argument: ", false});
  fake::Runtime& rt = fake::runtime();
  rt.model = args.get("-m", "models/ggml-base.en.bin");
  rt.host = args.get("--host", "127.0.0.1");
  rt.port = args.get_int("--port", 8080);
  rt.knobs = fake::load_knobs(rt.model + ".fake.json");
  fake::apply_exit_at_start();
  if (!rt.knobs.ignore_model_check && !fake::is_regular_file(rt.model)) {
    std::fprintf(stderr, "whisper_init_from_file_with_params_no_state: failed to open '%s'\n",
                 rt.model.c_str());
    std::fprintf(stderr, "error: failed to initialize whisper context\n");
    return 1;
  }
  std::string language = args.get("-l", "en");
  // Every route lives under --request-path, as in whisper.cpp's
  // examples/server/server.cpp (v1.8.2, lines 790-1157); a request outside
  // it gets the 404 of its error handler.
  const std::string prefix = args.get("--request-path", "");
  httplib::Server svr;
  svr.Get(prefix + "/health", fake::health_handler);
  svr.Post(prefix + args.get("--inference-path", "/inference"),
           [language](const httplib::Request& req, httplib::Response& res) {
             inference_handler(language, req, res);
           });
  svr.Post(prefix + "/load", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("Load was successful!", "text/plain");
  });
  fake::serve(svr,
              {"whisper_init_from_file_with_params_no_state: loading model from '" + rt.model + "'",
               "whisper server listening at http://{host}:{port}"});
}
