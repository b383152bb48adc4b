// Fake whisper-server (whisper.cpp's HTTP server): POST /inference takes a
// multipart upload and returns a deterministic transcript of it in the
// requested response_format; POST /load and GET /health as in the real one.
// As the real one (whisper.cpp v1.8.2, examples/server/server.cpp, checked
// by the `real` tier, issue #31):
// - a request without `file`, or with bytes it cannot decode as audio, gets
//   status 200 and {"error":...} (server.cpp lines 803-855);
// - `text` is labelled text/html, srt application/x-subrip, vtt text/vtt;
// - verbose_json has no seek or compression_ratio, but words per segment and
//   the detected language's probabilities (lines 1035-1100);
// - the fields of a request that fails stay set for the next request: only a
//   request that succeeds resets them (`params = default_params`).
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "fake_args.h"
#include "fake_reply.h"
#include "fake_runtime.h"
#include "fake_util.h"

namespace {

using fake::ArgKind;
using fake::json;

// The fields a failed request left behind (see the top of the file), under
// the one lock every inference takes (the real one's whisper_mutex).
std::mutex inference_mutex;
std::map<std::string, std::string>& kept_fields() {
  static std::map<std::string, std::string> kept;
  return kept;
}

std::string form_field(const httplib::Request& req, const char* name, const std::string& fallback) {
  if (req.has_file(name)) {
    return req.get_file_value(name).content;
  }
  auto kept = kept_fields().find(name);
  return kept != kept_fields().end() ? kept->second : fallback;
}

// What miniaudio, which the real one decodes with, recognises: WAV, FLAC,
// MP3 (an ID3 tag or a frame sync) and Ogg.
bool looks_like_audio(const std::string& b) {
  auto starts = [&b](const char* magic) { return b.rfind(magic, 0) == 0; };
  if (starts("RIFF")) {
    return b.size() > 44 && b.compare(8, 4, "WAVE") == 0;
  }
  return starts("fLaC") || starts("ID3") || starts("OggS") ||
         (b.size() > 2 && static_cast<unsigned char>(b[0]) == 0xFF &&
          (static_cast<unsigned char>(b[1]) & 0xE0) == 0xE0);
}

// "00:00:01,250" (srt) or "00:00:01.250" (vtt).
std::string timestamp(double seconds, char separator) {
  long ms = std::lround(seconds * 1000.0);
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
  if (format == "text") {
    *content_type = "text/html; charset=utf-8";
    return t.text + "\n";
  }
  if (format == "srt") {
    *content_type = "application/x-subrip";
    return "1\n" + timestamp(0, ',') + " --> " + timestamp(t.duration, ',') + "\n" + t.text +
           "\n\n";
  }
  if (format == "vtt") {
    *content_type = "text/vtt";
    return "WEBVTT\n\n" + timestamp(0, '.') + " --> " + timestamp(t.duration, '.') + "\n" + t.text +
           "\n\n";
  }
  *content_type = "application/json";
  if (format == "verbose_json") {
    json segment = {{"id", 0},
                    {"text", t.text},
                    {"start", 0.0},
                    {"end", t.duration},
                    {"tokens", json::array({50364})},
                    {"words", json::array({{{"word", t.text},
                                            {"start", 0.0},
                                            {"end", t.duration},
                                            {"t_dtw", -1},
                                            {"probability", 0.9}}})},
                    {"temperature", t.temperature},
                    {"avg_logprob", -0.25},
                    {"no_speech_prob", 0.01}};
    return fake::dump({{"task", "transcribe"},
                       {"language", t.language == "en" ? "english" : t.language},
                       {"duration", t.duration},
                       {"text", t.text},
                       {"segments", json::array({segment})},
                       {"detected_language", "english"},
                       {"detected_language_probability", 0.9},
                       {"language_probabilities", {{"en", 0.9}}}});
  }
  return fake::dump({{"text", t.text}});
}

void inference_handler(const std::string& default_language, const httplib::Request& req,
                       httplib::Response& res) {
  fake::JobPtr job = fake::admit(res);
  if (!job) {
    return;
  }
  std::lock_guard<std::mutex> lock(inference_mutex);
  if (!req.has_file("file")) {
    fake::reply_now(job, res, 200, R"({"error":"no 'file' field in the request"})");
    return;
  }
  httplib::MultipartFormData file = req.get_file_value("file");
  if (!looks_like_audio(file.content)) {
    for (const auto& [name, field] : req.files) {
      if (name != "file") {
        kept_fields()[name] = field.content;
      }
    }
    fake::reply_now(job, res, 200, R"({"error":"failed to read audio data"})");
    return;
  }
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
  kept_fields().clear();
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
