// Sessions outlive the router (issue #29 §2): after a clean stop (SIGTERM,
// which saves the session's slot) the next router's session continues from
// the restored slot; after a crash (SIGKILL, which saves nothing) it
// continues from its journaled history, recomputed. A malformed journal is
// reported and kept aside.
#include <csignal>
#include <fstream>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_events.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using SessionRestartTest = RouterTest;
using Json = nlohmann::json;

const std::string kSessionRoute = "/api/v1/sessions";

HttpReply post_message(int port, const std::string& id, const std::string& text) {
  return http_post(port, kSessionRoute + "/" + id + "/messages",
                   Json{{"role", "user"}, {"content", text}});
}

HttpReply run_turn(int port, const std::string& id) {
  return http_post(port, kSessionRoute + "/" + id + "/generate", Json{{"max_tokens", 4}});
}

// A session on user.a with one finished turn and a second question; its id.
std::string session_with_a_turn(int port) {
  HttpReply created =
      http_post(port, kSessionRoute, Json{{"model", "user.a"}, {"system", "brief"}});
  EXPECT_EQ(created.status, 200) << created.body;
  const std::string id = created.json().value("id", "");
  EXPECT_EQ(post_message(port, id, "tell me about lemons, at length, please").status, 200);
  HttpReply first = run_turn(port, id);
  EXPECT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(post_message(port, id, "and limes?").status, 200);
  return id;
}

void expect_continues(int port, const std::string& id, const std::string& how) {
  const Json before = http_get(port, kSessionRoute + "/" + id).json();
  ASSERT_EQ(before["history"].size(), 3u) << before.dump();
  EXPECT_EQ(before["system"], "brief");
  EXPECT_EQ(before["turns"], 1);
  HttpReply next = run_turn(port, id);
  ASSERT_EQ(next.status, 200) << next.body;
  const Json after = http_get(port, kSessionRoute + "/" + id).json();
  EXPECT_EQ(after["history"].size(), 4u) << after.dump();
  EXPECT_EQ(after["turns"], 2);
  EXPECT_EQ(after["resumed"], how) << after.dump();
  if (how == "restored") {
    EXPECT_GT(after["tokens"]["cached"].get<int>(), 0) << after.dump();
  } else {
    EXPECT_EQ(after["tokens"]["cached"].get<int>(), 0) << after.dump();
  }
}

TEST_F(SessionRestartTest, ASessionContinuesAfterACleanRestartFromItsSavedSlot) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const std::string id = session_with_a_turn(port());
  router().signal(SIGTERM);
  auto exited = router().wait_exit();
  ASSERT_TRUE(exited && exited->exited) << router().log_text();
  EXPECT_EQ(router().count_log("'user.a': saved slot 0"), 1) << router().log_text();

  ASSERT_NO_FATAL_FAILURE(start_router());
  expect_continues(port(), id, "restored");
  // Listed too, and deleted for good.
  const Json list = http_get(port(), kSessionRoute).json();
  ASSERT_EQ(list["data"].size(), 1u) << list.dump();
  EXPECT_EQ(list["data"][0]["id"], id);
  EXPECT_EQ(http_request(port(), "DELETE", kSessionRoute + "/" + id).status, 200);
  ASSERT_NO_FATAL_FAILURE(start_router());
  EXPECT_EQ(http_get(port(), kSessionRoute + "/" + id).status, 404);
}

TEST_F(SessionRestartTest, ASessionContinuesAfterACrashFromItsHistory) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  const std::string id = session_with_a_turn(port());
  EXPECT_TRUE(router().kill_and_reap().empty());  // SIGKILL: nothing saved

  ASSERT_NO_FATAL_FAILURE(start_router());
  expect_continues(port(), id, "recomputed");
}

TEST_F(SessionRestartTest, AMalformedJournalIsReportedAndKeptAside) {
  env_.add_llm("a");
  const std::string id = "sess_00000000000000000000000000000001";
  const auto dir = std::filesystem::path(env_.cache_dir()) / "sessions";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / (id + ".jsonl")) << "{\"k\":\"message\",\"t\":1}\nnot json\n";
  ASSERT_NO_FATAL_FAILURE(start_router());
  RouterEvents events(port());
  HttpReply r = http_get(port(), kSessionRoute + "/" + id);
  expect_error(r, 404, "session_not_found", "id", "a malformed journal is no session");
  auto reported = events.next("session_journal_malformed", "");
  ASSERT_TRUE(reported.has_value());
  EXPECT_EQ((*reported)["id"], id);
  EXPECT_TRUE(std::filesystem::exists(dir / "malformed" / (id + ".jsonl")));
  EXPECT_FALSE(std::filesystem::exists(dir / (id + ".jsonl")));
}

}  // namespace
}  // namespace lemon::testing
