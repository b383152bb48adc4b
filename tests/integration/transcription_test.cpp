// audio/transcriptions through the real router and the fake whisper-server,
// which imitates the real one's answers (issue #3; what the real program
// does, issue #31): formats and their Content-Types, the form's checks, and
// whisper-server's quirks kept away from clients.
#include <fstream>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/raw_http.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using TranscriptionTest = RouterTest;

FormPart wav_upload(const std::string& wav) {
  return form_file("file", wav, "speech.wav", "audio/wav");
}

TEST_F(TranscriptionTest, TranscriptionJsonAndText) {
  env_.add_whisper("w");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const std::string wav = wav_bytes(16000);
  HttpReply r = transcribe({wav_upload(wav), form_field("model", "user.w")});
  ASSERT_EQ(r.status, 200) << r.error << r.body;
  EXPECT_NE(r.header("Content-Type").find("application/json"), std::string::npos);
  auto j = r.json();
  const std::string expected =
      "fake transcript of " + std::to_string(wav.size()) + " bytes from speech.wav";
  EXPECT_EQ(j, (nlohmann::json{{"text", expected}})) << r.body;

  HttpReply t = transcribe(
      {form_field("model", "user.w"), wav_upload(wav), form_field("response_format", "text")},
      "/v1/audio/transcriptions");
  ASSERT_EQ(t.status, 200) << t.error << t.body;
  EXPECT_NE(t.header("Content-Type").find("text/plain"), std::string::npos)
      << t.header("Content-Type");
  EXPECT_NE(t.body.find(expected), std::string::npos) << t.body;
  EXPECT_TRUE(t.json().is_discarded()) << "text/plain passes through unwrapped: " << t.body;
}

TEST_F(TranscriptionTest, TranscriptionRejectsMissingFieldsAndBadFormats) {
  env_.add_whisper("w");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const std::string wav = wav_bytes(1600);
  expect_error(transcribe({form_field("model", "user.w")}), 400, "invalid_request_error", "file",
               "no file");
  expect_error(transcribe({wav_upload(wav)}), 400, "invalid_request_error", "model", "no model");
  expect_error(transcribe({wav_upload(wav), form_field("model", "user.w"),
                           form_field("response_format", "mp3")}),
               400, "invalid_request_error", "response_format", "response_format mp3");
  expect_nothing_loaded();
}

// whisper-server answers an upload it cannot decode with 200 and
// {"error":...} (issue #31): the client gets a 400 about `file`, and the
// fields of that request do not carry over to the next one, as they do in
// whisper-server itself.
TEST_F(TranscriptionTest, TranscriptionOfBytesThatAreNotAudioIsA400AndLeavesNothingBehind) {
  env_.add_whisper("w");
  ASSERT_NO_FATAL_FAILURE(start_router());
  HttpReply bad = transcribe({form_file("file", std::string(64, 'x'), "noise.wav", "audio/wav"),
                              form_field("model", "user.w"), form_field("response_format", "text"),
                              form_field("temperature", "0.7")});
  expect_error(bad, 400, "invalid_request_error", "file", "not audio");
  EXPECT_NE(bad.json()["error"]["message"].get<std::string>().find("failed to read audio data"),
            std::string::npos)
      << bad.body;

  HttpReply next = transcribe({wav_upload(wav_bytes(1600)), form_field("model", "user.w"),
                               form_field("response_format", "verbose_json")});
  ASSERT_EQ(next.status, 200) << next.body;
  EXPECT_EQ(next.json()["segments"][0]["temperature"], 0.0) << next.body;
  HttpReply plain = transcribe({wav_upload(wav_bytes(1600)), form_field("model", "user.w")});
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_TRUE(plain.json().contains("text"))
      << "json, not the failed request's text: " << plain.body;
}

TEST_F(TranscriptionTest, TranscriptionRefusesUnknownFieldsAndUploadsThatNameAFile) {
  env_.add_whisper("w");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const std::string wav = wav_bytes(1600);
  expect_error(transcribe({wav_upload(wav), form_field("model", "user.w"),
                           form_field("speaker_count", "2")}),
               400, "invalid_request_error", "speaker_count", "unknown field");
  expect_nothing_loaded();
  // whisper-server would open the named file and transcribe it.
  const std::string on_disk = env_.root() + "/meeting.wav";
  {
    std::ofstream out(on_disk, std::ios::binary);
    out << wav;
  }
  expect_error(
      transcribe({form_file("file", on_disk, "x.wav", "audio/wav"), form_field("model", "user.w")}),
      400, "invalid_request_error", "file", "a path as the upload");
  expect_error(
      transcribe({form_file("file", on_disk + std::string(1, '\0') + "tail", "x.wav", "audio/wav"),
                  form_field("model", "user.w")}),
      400, "invalid_request_error", "file", "a path up to a NUL");
}

TEST_F(TranscriptionTest, TranscriptionFormatsHaveTheirContentTypes) {
  env_.add_whisper("w");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const std::string wav = wav_bytes(16000);
  const std::pair<const char*, const char*> expected[] = {{"text", "text/plain"},
                                                          {"srt", "application/x-subrip"},
                                                          {"vtt", "text/vtt"},
                                                          {"verbose_json", "application/json"}};
  for (const auto& [format, type] : expected) {
    HttpReply r = transcribe(
        {wav_upload(wav), form_field("model", "user.w"), form_field("response_format", format)});
    ASSERT_EQ(r.status, 200) << format << ": " << r.body;
    EXPECT_EQ(r.header("Content-Type").rfind(type, 0), 0u)
        << format << ": " << r.header("Content-Type");
  }
}

}  // namespace
}  // namespace lemon::testing
