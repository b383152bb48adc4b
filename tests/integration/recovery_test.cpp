// Recovery against the real router and the fake llama-server (issue #14 §2):
// - a load that runs out of memory (the fake prints llama.cpp's CUDA
//   allocation failure while more than N other llama-servers run) unloads
//   the idle models of its device one at a time, least recently used first,
//   and evicts everything only before its last try; 507 when even that fails;
// - a chat the model's template rejects is repaired once and retried, and
//   the answer says so (X-Lemonade-Sanitized: 1); other errors are not;
// - a backend that resets the connection before answering is retried with
//   backoff (--backend-retry-delay), at most three times.
#include <gtest/gtest.h>

#include <future>

#include "support/http_client.h"
#include "support/router_events.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using RecoveryTest = RouterTest;
using Json = nlohmann::json;

const std::vector<std::string> kManyModels = {"--max-loaded-models", "8", "--memory-budget", "off"};

Json fake_state_of(int port, const std::string& model) {
  auto url = loaded_field(health(port), model, "backend_url");
  if (!url.is_string()) {
    ADD_FAILURE() << model << " is not loaded";
    return Json::object();
  }
  return fake_state(url.get<std::string>());
}

TEST_F(RecoveryTest, OutOfMemoryUnloadsIdleModelsLeastRecentlyUsedFirstUntilTheLoadFits) {
  env_.add_llm("a");
  env_.add_llm("b");
  env_.add_llm("c");
  // d runs out of memory while more than one other llama-server runs.
  env_.write_sidecar(env_.add_llm("d"), {{"oom_while_siblings_above", 1}});
  ASSERT_NO_FATAL_FAILURE(start_router(kManyModels));
  RouterEvents events(port());
  ASSERT_EQ(load(port(), "user.a").status, 200);
  ASSERT_EQ(load(port(), "user.b").status, 200);
  ASSERT_EQ(load(port(), "user.c").status, 200);
  ASSERT_EQ(chat(port(), "user.a").status, 200);  // b, then c, are the least recently used

  HttpReply r = load(port(), "user.d");
  ASSERT_EQ(r.status, 200) << r.body;
  // b went first, the load failed again with a and c running, then c went.
  auto first = events.next("eviction_planned", "user.b");
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ((*first)["reason"], "out_of_memory");
  auto second = events.next("eviction_planned", "user.c");
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ((*second)["reason"], "out_of_memory");
  ASSERT_TRUE(events.next("load_succeeded", "user.d").has_value());
  EXPECT_EQ(events.count("retrying_after_out_of_memory", "user.d"), 2);
  EXPECT_EQ(events.count("eviction_planned", "user.a"), 0);
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.a", "user.d"}));
  EXPECT_EQ(router().count_log("ran out of memory on ram; unloading idle"), 2);
}

TEST_F(RecoveryTest, OutOfMemoryEvictsEvenABusyModelBeforeTheLastTry) {
  env_.add_llm("a");
  env_.write_sidecar(env_.add_llm("d"), {{"oom_while_siblings_above", 0}});
  ASSERT_NO_FATAL_FAILURE(start_router(kManyModels));
  RouterEvents events(port());
  ASSERT_EQ(load(port(), "user.a").status, 200);
  // a is busy with a stream (held by the fake until the test releases it)
  // while d loads: no idle model to unload, so everything is evicted (a
  // after its stream ends) and d tried once more.
  const std::string a_url = loaded_field(health(port()), "user.a", "backend_url");
  nlohmann::json body = stream_body("user.a", 3, 0);
  body["lemon_fake"]["gate"] = "start";
  SseStream stream(port(), "/api/v1/chat/completions", body.dump());
  ASSERT_TRUE(stream.read_head());
  ASSERT_TRUE(fake_holds(a_url, 1));  // generating
  auto loading = std::async(std::launch::async, [&] { return load(port(), "user.d"); });
  auto draining = events.next("drain_waiting", "user.a");
  ASSERT_TRUE(draining.has_value()) << "a was not drained for the evict-all";
  release_fake_gates(a_url);
  EXPECT_TRUE(stream.rest().back().is_done());
  ASSERT_EQ(loading.wait_for(kWait), std::future_status::ready);
  HttpReply r = loading.get();
  ASSERT_EQ(r.status, 200) << r.body;
  // (It came before a's drain, among the events already read.)
  EXPECT_EQ(events.count("retrying_after_evict_all", "user.d"), 1);
  EXPECT_EQ(events.count("eviction_planned", "user.a"), 0);  // never unloaded as idle
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.d"}));
}

TEST_F(RecoveryTest, OutOfMemoryWithEverythingEvictedIs507NamingTheEstimate) {
  env_.add_llm("a");
  env_.write_sidecar(env_.add_llm("d"), {{"oom_while_siblings_above", -1}});  // always
  ASSERT_NO_FATAL_FAILURE(start_router(kManyModels));
  ASSERT_EQ(load(port(), "user.a").status, 200);
  HttpReply r = chat(port(), "user.d");
  ASSERT_EQ(r.status, 507) << r.body;
  ASSERT_TRUE(is_error_envelope(r.json())) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "out_of_memory");
  const std::string message = r.json()["error"]["message"];
  EXPECT_NE(message.find("estimated"), std::string::npos) << message;
  EXPECT_NE(message.find("even with every other model unloaded"), std::string::npos) << message;
  // Tried twice: beside a, then after a was unloaded; with nothing else
  // loaded, no evict-all and no third try.
  EXPECT_EQ(router().count_log("starting user.d:"), 2);
  EXPECT_TRUE(loaded_names(health(port())).empty());
}

TEST_F(RecoveryTest, AnOutOfMemoryLoadWithNothingElseLoadedFailsWithoutRetrying) {
  env_.write_sidecar(env_.add_llm("d"), {{"oom_while_siblings_above", -1}});
  ASSERT_NO_FATAL_FAILURE(start_router(kManyModels));
  HttpReply r = load(port(), "user.d");
  ASSERT_EQ(r.status, 507) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "out_of_memory");
  EXPECT_EQ(router().count_log("starting user.d:"), 1);
}

TEST_F(RecoveryTest, AChatTheTemplateRejectsIsRepairedOnceAndMarked) {
  env_.write_sidecar(
      env_.add_llm("a"),
      {{"template_rules", {"reasoning_with_tool_calls", "system_first", "alternate_roles"}}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  const Json tool_call = {
      {"id", "call_1"}, {"type", "function"}, {"function", {{"name", "ls"}, {"arguments", "{}"}}}};
  const Json messages =
      Json::array({{{"role", "user"}, {"content", "list files"}},
                   {{"role", "assistant"},
                    {"content", "I will call ls."},
                    {"reasoning_content", "The user wants a listing."},
                    {"tool_calls", Json::array({tool_call})}},
                   {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "a.txt"}},
                   {{"role", "system"}, {"content", "Be brief."}},
                   {{"role", "user"}, {"content", "thanks"}},
                   {{"role", "user"}, {"content", "and now?"}}});
  HttpReply r = chat(port(), "user.a", {{"messages", messages}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("X-Lemonade-Sanitized"), "1");
  const Json state = fake_state_of(port(), "user.a");
  EXPECT_EQ(state["template_rejections"], 1);
  EXPECT_EQ(state["completed"], 2);  // the rejection, then the repaired chat
  const Json expected =
      Json::array({{{"role", "system"}, {"content", "Be brief."}},
                   {{"role", "user"}, {"content", "list files"}},
                   {{"role", "assistant"},
                    {"reasoning_content", "The user wants a listing.\n\nI will call ls."},
                    {"tool_calls", Json::array({tool_call})}},
                   {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "a.txt"}},
                   {{"role", "user"}, {"content", "thanks\n\nand now?"}}});
  EXPECT_EQ(state["last_request"]["messages"], expected) << state["last_request"].dump();
  EXPECT_TRUE(router().wait_for_log("retrying with repaired messages"));

  // A chat the template accepts is not touched.
  HttpReply plain = chat(port(), "user.a");
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_FALSE(plain.has_header("X-Lemonade-Sanitized"));
}

TEST_F(RecoveryTest, AStreamedChatIsRepairedBeforeItsFirstByte) {
  env_.write_sidecar(env_.add_llm("a"), {{"template_rules", {"alternate_roles"}}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  Json body = stream_body("user.a", 3, 0);
  body["messages"] =
      Json::array({{{"role", "user"}, {"content", "one"}}, {{"role", "user"}, {"content", "two"}}});
  HttpReply r = http_post(port(), "/api/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("X-Lemonade-Sanitized"), "1");
  EXPECT_NE(r.body.find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(r.body.find("error"), std::string::npos) << r.body;
}

TEST_F(RecoveryTest, ATemplateErrorTheRepairCannotFixReturnsTheBackendsError) {
  // Every chat fails with a template error, repaired or not.
  env_.write_sidecar(env_.add_llm("a"),
                     {{"error_status", {{"status", 400}, {"message", "Jinja Exception: no"}}}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  // Nothing to repair: no retry.
  HttpReply r = chat(port(), "user.a");
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["message"], "Jinja Exception: no");
  EXPECT_EQ(fake_state_of(port(), "user.a")["requests"], 1);
  // Repaired, retried once, and the retry's error is the answer.
  HttpReply twice = chat(port(), "user.a",
                         {{"messages", Json::array({{{"role", "user"}, {"content", "a"}},
                                                    {{"role", "user"}, {"content", "b"}}})}});
  ASSERT_EQ(twice.status, 400) << twice.body;
  EXPECT_TRUE(is_error_envelope(twice.json())) << twice.body;
  EXPECT_FALSE(twice.has_header("X-Lemonade-Sanitized"));
  EXPECT_EQ(fake_state_of(port(), "user.a")["requests"], 3);
}

TEST_F(RecoveryTest, OtherBackendErrorsAreNeverRetried) {
  env_.write_sidecar(env_.add_llm("a"), {{"error_status", {{"status", 500}, {"message", "boom"}}}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--backend-retry-delay", "0.01"}));
  HttpReply r = chat(port(), "user.a",
                     {{"messages", Json::array({{{"role", "user"}, {"content", "a"}},
                                                {{"role", "user"}, {"content", "b"}}})}});
  ASSERT_EQ(r.status, 500) << r.body;
  EXPECT_EQ(fake_state_of(port(), "user.a")["requests"], 1);
}

TEST_F(RecoveryTest, AConnectionResetBeforeTheAnswerIsRetried) {
  env_.write_sidecar(env_.add_llm("a"), {{"reset_first_requests", 2}});
  env_.write_sidecar(env_.add_llm("b"), {{"reset_first_requests", 1}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--backend-retry-delay", "0.01"}));
  HttpReply r = chat(port(), "user.a");
  ASSERT_EQ(r.status, 200) << r.body;
  Json state = fake_state_of(port(), "user.a");
  EXPECT_EQ(state["resets"], 2);
  EXPECT_EQ(state["completed"], 1);
  // (A reset on a reused keep-alive connection is retried at once by the
  // upstream client, as for any stale connection; the others wait.)
  EXPECT_GE(router().count_log("did not answer"), 1);
  // The same for a stream.
  HttpReply s = http_post(port(), "/api/v1/chat/completions", stream_body("user.b", 3, 0));
  ASSERT_EQ(s.status, 200) << s.body;
  EXPECT_NE(s.body.find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(fake_state_of(port(), "user.b")["resets"], 1);
}

TEST_F(RecoveryTest, ResetsAreRetriedThreeTimesAtMost) {
  env_.write_sidecar(env_.add_llm("a"), {{"reset_first_requests", 100}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--backend-retry-delay", "0.01"}));
  HttpReply r = chat(port(), "user.a");
  ASSERT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "backend_unavailable");
  EXPECT_EQ(router().count_log("did not answer"), 3);
  EXPECT_GE(fake_state_of(port(), "user.a")["resets"].get<int>(), 4);
}

TEST_F(RecoveryTest, NoRetryWithTheDelaySetToZero) {
  env_.write_sidecar(env_.add_llm("a"), {{"reset_first_requests", 1}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--backend-retry-delay", "0"}));
  HttpReply r = chat(port(), "user.a");
  ASSERT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(fake_state_of(port(), "user.a")["resets"], 1);
  EXPECT_EQ(chat(port(), "user.a").status, 200);  // the fake answers from now on
}

}  // namespace
}  // namespace lemon::testing
