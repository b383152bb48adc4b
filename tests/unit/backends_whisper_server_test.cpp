// What WhisperServer mends of the real whisper-server (issue #31): the form
// it sends, the upload it refuses and the 200-with-an-error answer it turns
// into a 400 (its memory estimate: backends_memory_estimate_test.cpp). And
// the transcription form's own checks.
#include <gtest/gtest.h>

#include <deque>
#include <fstream>
#include <string>
#include <vector>

#include "lemon/api/openai/transcription_form.h"
#include "lemon/backends/whisper_server.h"
#include "support/temp_dir.h"

namespace lemon {
namespace {

using testing::TempDir;

class WhisperForm : public ::testing::Test {
 protected:
  WhisperForm() : server_(model(), *RecipeOptions::from_json("whispercpp", {}), env_) {}
  static ModelInfo model() {
    ModelInfo info;
    info.name = "whisper";
    info.recipe = "whispercpp";
    info.type = ModelType::kAudio;
    info.checkpoints = {{"main", "ggerganov/whisper.cpp:ggml-tiny.bin"}};
    info.resolved_paths = {{"main", "/hub/ggml-tiny.bin"}};
    info.downloaded = true;
    return info;
  }
  static std::string value_of(const std::vector<FormField>& form, const std::string& name) {
    std::string found = "<absent>";
    for (const auto& f : form) {
      if (f.name == name) {
        found = f.data;
      }
    }
    return found;
  }

  BackendEnvironment env_;
  WhisperServer server_;
};

TEST_F(WhisperForm, ResponseFormatAndTemperatureAreAlwaysSent) {
  const std::vector<FormField> bare = {{"file", "a.wav", "audio/wav", "RIFF...."},
                                       {"model", "", "", "w"}};
  auto sent = server_.rewrite_form(ApiRoute::kTranscriptions, bare);
  ASSERT_TRUE(sent.has_value());
  EXPECT_EQ(value_of(*sent, "response_format"), "json");
  EXPECT_EQ(value_of(*sent, "temperature"), "0.0");
  EXPECT_EQ(value_of(*sent, "file"), "RIFF....");
  EXPECT_EQ(sent->size(), 4u);

  const std::vector<FormField> chosen = {{"file", "a.wav", "", "RIFF"},
                                         {"response_format", "", "", "srt"},
                                         {"temperature", "", "", "0.4"}};
  sent = server_.rewrite_form(ApiRoute::kTranscriptions, chosen);
  ASSERT_TRUE(sent.has_value());
  EXPECT_EQ(value_of(*sent, "response_format"), "srt");
  EXPECT_EQ(value_of(*sent, "temperature"), "0.4");
  EXPECT_EQ(sent->size(), 3u);
  EXPECT_FALSE(server_.rewrite_form(ApiRoute::kImageEdits, chosen).has_value());
}

TEST_F(WhisperForm, TheUploadIsPassedOnUncopied) {
  // The form views the client's body; the rewritten form views the same
  // bytes, and values the router adds own theirs (issue #31 review).
  const std::string upload = "RIFF" + std::string(4096, 'x');
  const std::vector<FormField> form = {{"file", "a.wav", "audio/wav", upload}};
  auto sent = server_.rewrite_form(ApiRoute::kTranscriptions, form);
  ASSERT_TRUE(sent.has_value());
  ASSERT_EQ(sent->front().name, "file");
  EXPECT_EQ(sent->front().data.data(), upload.data());
  EXPECT_EQ(sent->front().storage, nullptr);

  const FormField made = FormField::text("prompt", "a cat");
  const FormField copy = made;  // the copy's view stays valid: it shares the bytes
  EXPECT_EQ(copy.data, "a cat");
  EXPECT_EQ(copy.data.data(), made.storage->data());
}

TEST_F(WhisperForm, AnUploadThatNamesAFileIsRefused) {
  TempDir dir;
  const std::string path = dir.path().string() + "/meeting.wav";
  std::ofstream(path) << "RIFF";
  for (const std::string& bytes : {path, path + std::string(1, '\0') + "rest"}) {
    auto checked = server_.check_form(ApiRoute::kTranscriptions, {{"file", "x.wav", "", bytes}});
    ASSERT_FALSE(checked.ok());
    EXPECT_EQ(checked.error().code(), ErrorCode::kInvalidRequest);
    EXPECT_EQ(checked.error().param(), "file");
  }
  EXPECT_TRUE(server_
                  .check_form(ApiRoute::kTranscriptions,
                              {{"file", "x.wav", "", dir.path().string() + "/absent.wav"}})
                  .ok());
  EXPECT_TRUE(
      server_.check_form(ApiRoute::kTranscriptions, {{"file", "x.wav", "", "RIFF\x24\x10"}}).ok());
  EXPECT_TRUE(
      server_
          .check_form(ApiRoute::kTranscriptions, {{"file", "x.wav", "", std::string("\0RIFF", 5)}})
          .ok());
}

TEST_F(WhisperForm, A200WithAnErrorIsARefusalAboutTheFile) {
  auto refused = server_.refusal_in_answer(ApiRoute::kTranscriptions,
                                           R"({"error":"failed to read audio data"})");
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->code(), ErrorCode::kInvalidRequest);
  EXPECT_EQ(refused->param(), "file");
  EXPECT_NE(refused->message().find("failed to read audio data"), std::string::npos);

  for (const char* fine : {R"({"text":"hello"})", "hello\n", "1\n00:00:00,000 --> ", "",
                           R"({"text":"x","error":"ignored"})", "{not json"}) {
    EXPECT_FALSE(server_.refusal_in_answer(ApiRoute::kTranscriptions, fine).has_value()) << fine;
  }
}

// ---- the transcription form --------------------------------------------------

std::vector<http::MultipartPart> form(
    const std::vector<std::pair<std::string, std::string>>& fields) {
  std::vector<http::MultipartPart> parts;
  for (const auto& [name, value] : fields) {
    static std::deque<std::string> keep;  // the parts view their data
    keep.push_back(value);
    parts.push_back({name, name == "file" ? "a.wav" : "", "", keep.back()});
  }
  return parts;
}

TEST(TranscriptionForm, TakesOpenAIsAndWhisperServersFields) {
  EXPECT_TRUE(api::check_transcription_form(form({{"file", "RIFF"},
                                                  {"model", "w"},
                                                  {"language", "fr"},
                                                  {"timestamp_granularities[]", "word"},
                                                  {"translate", "true"},
                                                  {"response_format", "vtt"}}))
                  .ok());
}

TEST(TranscriptionForm, RefusesWhatItDoesNotTake) {
  struct Case {
    std::vector<std::pair<std::string, std::string>> fields;
    std::string param;
  };
  const Case cases[] = {
      {{{"model", "w"}}, "file"},
      {{{"file", ""}, {"model", "w"}}, "file"},
      {{{"file", "RIFF"}}, "model"},
      {{{"file", "RIFF"}, {"model", "w"}, {"speakers", "2"}}, "speakers"},
      {{{"file", "RIFF"}, {"model", "w"}, {"response_format", "mp3"}}, "response_format"},
  };
  for (const auto& c : cases) {
    auto checked = api::check_transcription_form(form(c.fields));
    ASSERT_FALSE(checked.ok()) << c.param;
    EXPECT_EQ(checked.error().code(), ErrorCode::kInvalidRequest);
    EXPECT_EQ(checked.error().param(), c.param);
  }
}

TEST(TranscriptionForm, TextIsPlainText) {
  EXPECT_EQ(api::transcription_content_type(form({{"response_format", "text"}})),
            "text/plain; charset=utf-8");
  EXPECT_EQ(api::transcription_content_type(form({{"response_format", "srt"}})), "");
  EXPECT_EQ(api::transcription_content_type(form({})), "");
}

}  // namespace
}  // namespace lemon
