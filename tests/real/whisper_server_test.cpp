// The router against a real whisper-server (LEMON_REAL_WHISPER_SERVER) and
// tiny random-weight whisper models (issue #31): load and readiness, every
// response format, bad input, an unload's exit status, a crash and the
// reload after it, two models swapping, and the memory estimate against
// the process's RSS. Random weights make the transcripts nonsense; the tests
// check shapes, statuses and processes, never words.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "real/real_backend.h"
#include "support/http_client.h"
#include "support/process_signal.h"
#include "support/process_watch.h"
#include "support/raw_http.h"
#include "support/router_events.h"

namespace lemon::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Speech from espeak-ng when it is installed, else two seconds of tone.
std::string speech_wav(const std::string& dir) {
  const std::string path = dir + "/speech.wav";
  if (run_program({"espeak-ng", "-w", path, "the meeting starts at nine"}) == 0) {
    return read_file(path);
  }
  return wav_bytes(32000);
}

// The resident memory of `pid`, in bytes (0 when it is gone).
std::int64_t rss_bytes(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/statm");
  std::int64_t size = 0;
  std::int64_t resident = 0;
  in >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

class WhisperTest : public RealWhisperTest {
 protected:
  HttpReply transcribe(const std::string& model, const std::string& audio,
                       const std::vector<FormPart>& extra = {}) {
    std::vector<FormPart> parts = {form_file("file", audio, "speech.wav", "audio/wav"),
                                   form_field("model", model)};
    parts.insert(parts.end(), extra.begin(), extra.end());
    return raw_request(port(), "POST", "/api/v1/audio/transcriptions",
                       {{"Content-Type", multipart_content_type()}}, multipart_body(parts));
  }
  static double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  }
  // The path whisper-server serves under: its --request-path (the secret).
  static std::string request_prefix(int pid) {
    const std::string cmd = command_line(pid);
    const auto at = cmd.find("--request-path");
    if (at == std::string::npos) {
      return {};
    }
    const auto from = at + std::string("--request-path").size() + 1;
    return cmd.substr(from, cmd.find_first_of(" \n", from) - from);
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

TEST_F(WhisperTest, LoadsAndAnswersInEveryFormat) {
  ASSERT_NO_FATAL_FAILURE(add_tiny_whisper("w"));
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  const std::string audio = speech_wav(env_.root());
  const auto started = Clock::now();
  ASSERT_NO_FATAL_FAILURE(load_ok("user.w"));
  RecordProperty("load_ms", static_cast<int>(ms_since(started)));

  HttpReply j = transcribe("user.w", audio);
  ASSERT_EQ(j.status, 200) << j.body;
  EXPECT_TRUE(j.json()["text"].is_string()) << j.body;
  EXPECT_EQ(j.json().size(), 1u) << "json is {\"text\"} alone: " << j.body;

  HttpReply t = transcribe("user.w", audio, {form_field("response_format", "text")});
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(t.header("Content-Type").rfind("text/plain", 0), 0u) << t.header("Content-Type");

  HttpReply v = transcribe("user.w", audio, {form_field("response_format", "verbose_json")});
  ASSERT_EQ(v.status, 200) << v.body;
  const json verbose = v.json();
  EXPECT_EQ(verbose["task"], "transcribe") << v.body;
  EXPECT_TRUE(verbose["text"].is_string()) << v.body;
  EXPECT_TRUE(verbose["segments"].is_array()) << v.body;
  // 16-bit mono: the header's sample rate (bytes 24-27, little-endian).
  std::uint32_t rate = 0;
  for (int i = 3; i >= 0; --i) {
    rate = (rate << 8) | static_cast<unsigned char>(audio[24 + i]);
  }
  const double seconds = static_cast<double>(audio.size() - 44) / 2.0 / rate;
  EXPECT_GT(verbose["duration"].get<double>(), 0.0) << v.body;
  EXPECT_NEAR(verbose["duration"].get<double>(), seconds, 0.5) << v.body;

  for (const auto& [format, type] :
       {std::pair<const char*, const char*>{"srt", "application/x-subrip"}, {"vtt", "text/vtt"}}) {
    HttpReply r = transcribe("user.w", audio, {form_field("response_format", format)});
    ASSERT_EQ(r.status, 200) << format << ": " << r.body;
    EXPECT_EQ(r.header("Content-Type").rfind(type, 0), 0u) << format;
  }
}

// Each gets a clear 400 about its field, and the same whisper-server goes
// on serving.
TEST_F(WhisperTest, BadInputGetsA400AndTheBackendLivesOn) {
  ASSERT_NO_FATAL_FAILURE(add_tiny_whisper("w"));
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  const std::string audio = speech_wav(env_.root());
  pid_t pid = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.w", &pid));

  std::string corrupt = audio.substr(0, 12) + std::string(400, '\x7f');
  HttpReply bad = transcribe("user.w", corrupt, {form_field("response_format", "text")});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(bad.json()["error"]["param"], "file") << bad.body;
  // whisper-server kept the failed request's `text`; the router's next
  // request, asking for nothing, still gets json.
  HttpReply after = transcribe("user.w", audio);
  ASSERT_EQ(after.status, 200) << after.body;
  EXPECT_TRUE(after.json().contains("text")) << after.body;

  HttpReply empty = transcribe("user.w", "");
  EXPECT_EQ(empty.status, 400) << empty.body;
  EXPECT_EQ(empty.json()["error"]["param"], "file") << empty.body;

  HttpReply unknown = transcribe("user.w", audio, {form_field("speakers", "2")});
  EXPECT_EQ(unknown.status, 400) << unknown.body;
  EXPECT_EQ(unknown.json()["error"]["param"], "speakers") << unknown.body;

  // An upload whose bytes are a path: whisper-server, asked directly,
  // transcribes the file it names; the router refuses it.
  const std::string on_disk = env_.root() + "/private.wav";
  std::ofstream(on_disk, std::ios::binary) << audio;
  const std::string url = loaded_field(health(port()), "user.w", "backend_url");
  const std::string prefix = request_prefix(pid);
  ASSERT_FALSE(prefix.empty()) << command_line(pid);
  HttpReply direct = url_request(url, "POST", prefix + "/inference",
                                 multipart_body({form_file("file", on_disk, "x.wav", "audio/wav")}),
                                 {{"Content-Type", multipart_content_type()}});
  ASSERT_EQ(direct.status, 200) << direct.body;
  EXPECT_TRUE(direct.json().contains("text"))
      << "whisper-server no longer reads a path from the upload; the router's check can go: "
      << direct.body;
  HttpReply path = transcribe("user.w", on_disk);
  EXPECT_EQ(path.status, 400) << path.body;
  EXPECT_EQ(path.json()["error"]["param"], "file") << path.body;

  EXPECT_EQ(loaded_pid(port(), "user.w"), pid) << "the backend was restarted";
  EXPECT_EQ(transcribe("user.w", audio).status, 200);
}

// docs/benchmarks.md "Real backends": the router's added latency on a
// transcription, against the same whisper-server called directly.
TEST_F(WhisperTest, TheRouterAddsLittleToATranscription) {
  ASSERT_NO_FATAL_FAILURE(add_tiny_whisper("w"));
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  const std::string audio = speech_wav(env_.root());
  pid_t pid = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.w", &pid));
  const std::string url = loaded_field(health(port()), "user.w", "backend_url");
  const std::string prefix = request_prefix(pid);
  const std::string direct_body =
      multipart_body({form_file("file", audio, "speech.wav", "audio/wav"),
                      form_field("response_format", "json"), form_field("temperature", "0.0")});
  std::vector<double> direct;
  std::vector<double> routed;
  for (int i = 0; i < 11; ++i) {
    auto t = Clock::now();
    ASSERT_EQ(url_request(url, "POST", prefix + "/inference", direct_body,
                          {{"Content-Type", multipart_content_type()}})
                  .status,
              200);
    direct.push_back(ms_since(t));
    t = Clock::now();
    ASSERT_EQ(transcribe("user.w", audio).status, 200);
    routed.push_back(ms_since(t));
  }
  const double added = median(routed) - median(direct);
  RecordProperty("direct_ms", static_cast<int>(median(direct)));
  RecordProperty("routed_ms", static_cast<int>(median(routed)));
  RecordProperty("added_us", static_cast<int>(added * 1000));
  std::cout << "transcription: direct " << median(direct) << " ms, routed " << median(routed)
            << " ms, added " << added << " ms\n";
  // A guard against gross regressions only: with other tests running
  // beside it (ctest -j2), a median moves by a tenth either way.
  EXPECT_LT(added, std::max(20.0, 0.25 * median(direct)))
      << "the router adds more than a quarter to a transcription";
}

TEST_F(WhisperTest, AnUnloadedWhisperServerExitsCleanly) {
  ASSERT_NO_FATAL_FAILURE(add_tiny_whisper("w"));
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  ASSERT_NO_FATAL_FAILURE(load_ok("user.w"));
  RouterEvents events(port());
  ASSERT_EQ(http_post(port(), "/api/v1/unload", json{{"model_name", "user.w"}}).status, 200);
  auto stopped = events.next("server_stopped", "user.w");
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ((*stopped)["exit"], "exit code 0") << stopped->dump();
  RecordProperty("stop_ms", static_cast<int>((*stopped)["stop_s"].get<double>() * 1000));
}

TEST_F(WhisperTest, AKilledWhisperServerIsStartedAgainByTheNextRequest) {
  ASSERT_NO_FATAL_FAILURE(add_tiny_whisper("w"));
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  const std::string audio = speech_wav(env_.root());
  pid_t pid = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.w", &pid));
  ASSERT_NO_FATAL_FAILURE(signal_process(pid, SIGKILL));
  ASSERT_TRUE(wait_pid_exit(pid, std::chrono::seconds(10)));
  HttpReply r = transcribe("user.w", audio);
  EXPECT_EQ(r.status, 200) << r.body;
  const int again = loaded_pid(port(), "user.w");
  EXPECT_GT(again, 0);
  EXPECT_NE(again, pid);
}

TEST_F(WhisperTest, TwoModelsSwapWithOneLoaded) {
  ASSERT_NO_FATAL_FAILURE(add_tiny_whisper("a", 1));
  ASSERT_NO_FATAL_FAILURE(add_tiny_whisper("b", 2));
  ASSERT_NO_FATAL_FAILURE(start_real_router({"--max-loaded-models", "1"}));
  const std::string audio = speech_wav(env_.root());
  double worst_switch_ms = 0;
  for (int round = 0; round < 3; ++round) {
    for (const char* model : {"user.a", "user.b"}) {
      const auto started = Clock::now();
      HttpReply r = transcribe(model, audio);
      ASSERT_EQ(r.status, 200) << model << ": " << r.body;
      worst_switch_ms = std::max(worst_switch_ms, ms_since(started));
      EXPECT_EQ(loaded_names(health(port())), Names{model});
    }
  }
  RecordProperty("worst_switch_ms", static_cast<int>(worst_switch_ms));
}

// whisper-server out of memory while it loads (run under `ulimit -v` by a
// wrapper, the real program's own lines): a 507 out_of_memory, after the
// router's retries, never a generic load error.
TEST_F(WhisperTest, AWhisperServerOutOfMemoryIsA507) {
  ASSERT_NO_FATAL_FAILURE(
      add_tiny_whisper("base", 5, {"--state", "512", "--heads", "8", "--layers", "6"}));
  const std::string wrapper = env_.root() + "/whisper-server-in-200-mb";
  {
    std::ofstream out(wrapper);
    out << "#!/bin/sh\nulimit -v 200000\nexec '" << program_ << "' \"$@\"\n";
  }
  ASSERT_EQ(::chmod(wrapper.c_str(), 0755), 0);
  ASSERT_NO_FATAL_FAILURE(start_router({}, {{"LEMONADE_WHISPERCPP_CPU_BIN", wrapper}}));
  HttpReply r = load(port(), "user.base");
  EXPECT_EQ(r.status, 507) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "out_of_memory") << r.body;
}

// The estimate the router admits a whisper model with covers what the
// process holds once it has transcribed (issue #31 §4), for the tiny model
// and for one of whisper base's shape (148 MB, written in a few seconds).
TEST_F(WhisperTest, TheMemoryEstimateCoversTheProcess) {
  ASSERT_NO_FATAL_FAILURE(add_tiny_whisper("tiny"));
  ASSERT_NO_FATAL_FAILURE(
      add_tiny_whisper("base", 5, {"--state", "512", "--heads", "8", "--layers", "6"}));
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  const std::string audio = speech_wav(env_.root());
  for (const std::string model : {"user.tiny", "user.base"}) {
    pid_t pid = 0;
    ASSERT_NO_FATAL_FAILURE(load_ok(model, &pid));
    ASSERT_EQ(transcribe(model, audio).status, 200);
    const std::int64_t rss = rss_bytes(pid);
    const json memory = loaded_field(health(port()), model, "memory");
    const std::int64_t estimate = memory["estimate"].value("ram", std::int64_t{0});
    RecordProperty(model + "_rss_mib", static_cast<int>(rss >> 20));
    RecordProperty(model + "_estimate_mib", static_cast<int>(estimate >> 20));
    EXPECT_GE(estimate, rss) << model << ": " << memory.dump();
    EXPECT_LE(estimate, 4 * rss + (64 << 20))
        << model << " far above the process: " << memory.dump();
  }
}

}  // namespace
}  // namespace lemon::testing
