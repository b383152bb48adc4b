// Speculative decoding against a real llama-server (LEMON_REAL_LLAMA_SERVER):
// a model with a draft checkpoint (the tiny chat model drafting for itself:
// the two share a vocabulary, as llama-server requires) loads with the draft
// flags the server takes, drafts tokens that its timings report and the
// router counts; a load with "speculative": false runs without it; and the
// mtp label's flags are taken by the server or the load fails with its own
// words, never silently.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "real/real_backend.h"
#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/test_env.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

class RealSpeculationTest : public RealLlamaTest {
 protected:
  std::string add_drafted(const std::string& key) {
    const std::filesystem::path draft = env_.root() + "/draft.gguf";
    if (!std::filesystem::exists(draft)) {
      std::filesystem::create_symlink(real_model_file("tiny-llama-chat.gguf"), draft);
    }
    env_.add_user_model(
        key, {{"checkpoints",
               {{"main", real_model_file("tiny-llama-chat.gguf")}, {"draft", draft.string()}}},
              {"recipe", "llamacpp"},
              {"source", "local_path"}});
    return draft.string();
  }
};

TEST_F(RealSpeculationTest, ADraftModelDraftsAndItsTokensAreCounted) {
  const std::string draft = add_drafted("drafted");
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  HttpReply loaded = load(port(), "user.drafted");
  ASSERT_EQ(loaded.status, 200) << loaded.body;
  const json entry = *loaded_entry(health(port()), "user.drafted");
  EXPECT_EQ(entry["speculation"]["draft"], draft) << entry.dump();
  const int pid = entry.value("pid", -1);
  ASSERT_GT(pid, 0) << entry.dump();
  EXPECT_NE(command_line(pid).find(draft), std::string::npos) << command_line(pid);

  HttpReply r = chat(port(), "user.drafted", {{"max_tokens", 24}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json stats = http_get(port(), "/api/v1/stats").json();
  EXPECT_GT(stats.value("draft_tokens", 0), 0) << stats.dump();
  EXPECT_GE(stats.value("draft_accepted_tokens", -1), 0) << stats.dump();

  // Without speculation for one load: no draft on the command line.
  ASSERT_EQ(load(port(), "user.drafted", {{"speculative", false}}).status, 200);
  const json plain = *loaded_entry(health(port()), "user.drafted");
  EXPECT_FALSE(plain.contains("speculation")) << plain.dump();
  EXPECT_EQ(command_line(plain.value("pid", -1)).find(draft), std::string::npos);
  EXPECT_EQ(chat(port(), "user.drafted", {{"max_tokens", 4}}).status, 200);
}

TEST_F(RealSpeculationTest, TheMtpLabelsFlagsAreTakenOrTheLoadSaysWhy) {
  env_.add_user_model("mtp", {{"checkpoint", real_model_file("tiny-llama-chat.gguf")},
                              {"recipe", "llamacpp"},
                              {"labels", {"mtp"}},
                              {"source", "local_path"}});
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  HttpReply loaded = load(port(), "user.mtp");
  if (loaded.status == 200) {
    // This llama-server takes the flags (the model has no MTP head, so it
    // drafts nothing useful, but it serves).
    const json entry = *loaded_entry(health(port()), "user.mtp");
    EXPECT_EQ(entry["speculation"]["mtp"], true) << entry.dump();
    EXPECT_EQ(chat(port(), "user.mtp", {{"max_tokens", 4}}).status, 200);
  } else {
    // A model without multi-token prediction layers is refused by the
    // server: the error is the load's, carrying llama-server's own lines.
    EXPECT_TRUE(is_error_envelope(loaded.json())) << loaded.body;
    EXPECT_GE(loaded.status, 500) << loaded.body;
    EXPECT_NE(loaded.body.find("llama"), std::string::npos) << loaded.body;
  }
}

}  // namespace
}  // namespace lemon::testing
