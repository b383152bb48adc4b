// llama.cpp request slots through the real router and the fake llama-server
// (issue #11 §6): each of `parallel` slots gets the whole ctx_size, requests
// beyond the slots wait in the router (never failing for lack of context),
// the line is bounded (503 queue_full with Retry-After), and a model whose
// loads keep failing rests, answering its last load error with Retry-After.
#include <gtest/gtest.h>

#include <future>

#include "support/http_client.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using SlotsTest = RouterTest;

// A chat body whose prompt the fake counts as about `tokens` tokens (it
// counts a token per 4 bytes of body), held by the fake until the test
// releases it (a gate, tests/fakes/README.md).
nlohmann::json long_prompt_chat(const std::string& model, int tokens) {
  nlohmann::json body = chat_body(model, {{"max_tokens", 8}});
  body["messages"] = {{{"role", "user"}, {"content", std::string(tokens * 4, 'x')}}};
  body["lemon_fake"] = {{"gate", "start"}};
  return body;
}

// A stream the fake holds open until the test releases it.
std::string held_stream(const std::string& model) {
  nlohmann::json body = stream_body(model, 3, 0);
  body["lemon_fake"]["gate"] = "start";
  return body.dump();
}

std::vector<std::string> argv_of(int port, const std::string& model) {
  return fake_state(loaded_field(health(port), model, "backend_url"))["argv"]
      .get<std::vector<std::string>>();
}

std::string value_after(const std::vector<std::string>& args, const std::string& flag) {
  auto it = std::find(args.begin(), args.end(), flag);
  return it == args.end() || it + 1 == args.end() ? "" : *(it + 1);
}

TEST_F(SlotsTest, ConcurrentLongPromptsEachGetTheWholeContext) {
  // Lemonade #3276: llama-server's default 4 slots share one --ctx-size cache,
  // so four 1,700-token prompts at once all fail. Here each slot has 2048.
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--parallel", "4", "--ctx-size", "2048"}));
  ASSERT_EQ(load(port(), "user.a").status, 200);
  auto args = argv_of(port(), "user.a");
  EXPECT_EQ(value_after(args, "--parallel"), "4");
  EXPECT_EQ(value_after(args, "--ctx-size"), "8192");
  auto slots = loaded_field(health(port()), "user.a", "slots");
  EXPECT_EQ(slots["total"], 4) << slots.dump();
  EXPECT_EQ(slots["ctx_size"], 2048) << slots.dump();

  const std::string body = long_prompt_chat("user.a", 1700).dump();
  std::vector<std::future<HttpReply>> replies;
  for (int i = 0; i < 4; ++i) {
    replies.push_back(std::async(
        std::launch::async, [&] { return http_post(port(), "/api/v1/chat/completions", body); }));
  }
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  ASSERT_TRUE(fake_holds(url, 4)) << "the four did not run at once: " << fake_state(url).dump();
  release_fake_gates(url);
  for (auto& r : replies) {
    HttpReply reply = r.get();
    EXPECT_EQ(reply.status, 200) << reply.body;
  }
  auto state = fake_state(loaded_field(health(port()), "user.a", "backend_url"));
  EXPECT_EQ(state["peak_busy_slots"], 4) << "the four ran at once: " << state.dump();
  EXPECT_EQ(state["waited_for_slot"], 0) << state.dump();
}

TEST_F(SlotsTest, RequestsBeyondTheSlotsWaitInTheRouterAndAllSucceed) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--parallel", "2"}));
  ASSERT_EQ(load(port(), "user.a").status, 200);
  // Two streams take both slots and stay open until the test releases them.
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  SseStream s1(port(), "/api/v1/chat/completions", held_stream("user.a"));
  SseStream s2(port(), "/api/v1/chat/completions", held_stream("user.a"));
  ASSERT_TRUE(s1.read_head() && s2.read_head());
  ASSERT_TRUE(fake_holds(url, 2));
  std::vector<std::future<HttpReply>> waiting;
  for (int i = 0; i < 4; ++i) {
    waiting.push_back(std::async(std::launch::async, [&] {
      return chat(port(), "user.a", {{"max_tokens", 2}});
    }));
  }
  // One goes ahead into llama-server's own queue, so it starts the moment a
  // slot frees (issue #27); the other three wait in the router's line.
  nlohmann::json slots;
  ASSERT_TRUE(eventually([&] {
    slots = loaded_field(health(port()), "user.a", "slots");
    return slots["waiting"] == 3;
  })) << slots.dump();
  EXPECT_EQ(slots["busy"], 2);
  EXPECT_EQ(slots["queued_in_backend"], 1);
  EXPECT_EQ(slots["total"], 2);
  EXPECT_TRUE(eventually([&] { return fake_state(url)["queued_for_slot"] == 1; }));
  release_fake_gates(url);
  EXPECT_TRUE(s1.rest().back().is_done());
  EXPECT_TRUE(s2.rest().back().is_done());
  for (auto& w : waiting) {
    HttpReply r = w.get();
    EXPECT_EQ(r.status, 200) << r.body;
  }
  auto state = fake_state(loaded_field(health(port()), "user.a", "backend_url"));
  EXPECT_EQ(state["peak_busy_slots"], 2) << state.dump();
  EXPECT_GE(state["waited_for_slot"], 1) << state.dump();
  // The router holds at most the slots and one more (three leases). When
  // both streams end together, the two requests it sends next may find the
  // backend still freeing those slots, so for a moment all three can wait
  // inside it; never the fourth.
  EXPECT_GE(state["peak_queued_for_slot"], 1) << state.dump();
  EXPECT_LE(state["peak_queued_for_slot"], 3) << state.dump();
  EXPECT_EQ(state["completed"], 6) << state.dump();
}

TEST_F(SlotsTest, NothingGoesAheadWhileASessionHoldsASlot) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--parallel", "1"}));
  ASSERT_EQ(load(port(), "user.a").status, 200);
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  HttpReply session = http_post(port(), "/api/v1/sessions", nlohmann::json{{"model", "user.a"}});
  ASSERT_EQ(session.status, 200) << session.body;
  ASSERT_TRUE(session.json().contains("slot")) << session.body;
  SseStream holder(port(), "/api/v1/chat/completions", held_stream("user.a"));
  ASSERT_TRUE(holder.read_head());
  ASSERT_TRUE(fake_holds(url, 1));
  // A request sent ahead could take the session's slot once it frees: it
  // waits in the router's line instead.
  auto waiting = std::async(std::launch::async, [&] { return chat(port(), "user.a"); });
  nlohmann::json slots;
  ASSERT_TRUE(eventually([&] {
    slots = loaded_field(health(port()), "user.a", "slots");
    return slots["waiting"] == 1;
  })) << slots.dump();
  EXPECT_EQ(slots["queued_in_backend"], 0);
  EXPECT_EQ(fake_state(url)["queued_for_slot"], 0);
  release_fake_gates(url);
  EXPECT_TRUE(holder.rest().back().is_done());
  EXPECT_EQ(waiting.get().status, 200);
}

TEST_F(SlotsTest, ParallelIsAPerModelLoadOption) {
  env_.add_llm("a");
  env_.add_llm("b");
  env_.write_recipe_options({{"user.b", {{"parallel", 3}}}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "2"}));
  ASSERT_EQ(load(port(), "user.a", {{"parallel", 2}, {"ctx_size", 1024}}).status, 200);
  ASSERT_EQ(load(port(), "user.b").status, 200);
  auto h = health(port());
  EXPECT_EQ(loaded_field(h, "user.a", "slots")["total"], 2);
  EXPECT_EQ(loaded_field(h, "user.a", "recipe_options")["parallel"], 2);
  EXPECT_EQ(value_after(argv_of(port(), "user.a"), "--ctx-size"), "2048");
  EXPECT_EQ(loaded_field(h, "user.b", "slots")["total"], 3) << "from recipe_options.json";

  HttpReply bad = load(port(), "user.a", {{"parallel", 0}});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(bad.json()["error"]["param"], "parallel") << bad.body;
}

TEST_F(SlotsTest, PastTheLineBoundRequestsGet503WithRetryAfter) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--parallel", "1", "--max-queued-requests", "1"}));
  ASSERT_EQ(load(port(), "user.a").status, 200);
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  SseStream holder(port(), "/api/v1/chat/completions", held_stream("user.a"));
  ASSERT_TRUE(holder.read_head());
  ASSERT_TRUE(fake_holds(url, 1));
  // One request waits inside llama-server's queue (issue #27), one in the
  // router's line, which is then full.
  auto ahead = std::async(std::launch::async, [&] { return chat(port(), "user.a"); });
  ASSERT_TRUE(eventually([&] { return fake_state(url)["queued_for_slot"] == 1; }));
  auto waiting = std::async(std::launch::async, [&] { return chat(port(), "user.a"); });
  ASSERT_TRUE(
      eventually([&] { return loaded_field(health(port()), "user.a", "slots")["waiting"] == 1; }));
  HttpReply full = chat(port(), "user.a");
  EXPECT_EQ(full.status, 503) << full.body;
  ASSERT_TRUE(is_error_envelope(full.json())) << full.body;
  EXPECT_EQ(full.json()["error"]["code"], "queue_full");
  EXPECT_EQ(full.header("Retry-After"), "1");
  release_fake_gates(url);
  EXPECT_TRUE(holder.rest().back().is_done());
  EXPECT_EQ(ahead.get().status, 200);
  EXPECT_EQ(waiting.get().status, 200);
}

TEST_F(SlotsTest, AModelThatFailsToLoadTwiceRestsUntilAnExplicitLoad) {
  const std::string file = env_.add_llm("x");
  env_.write_sidecar(file, {{"exit_at_start", {{"code", 3}, {"message", "boom: bad file"}}}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  for (int i = 0; i < 2; ++i) {
    HttpReply r = chat(port(), "user.x");
    EXPECT_EQ(r.status, 500) << r.body;
    EXPECT_FALSE(r.has_header("Retry-After") && i == 0) << "one failure does not rest";
  }
  const int starts = router().count_log("starting user.x");
  // The first tried twice (evict-all-then-retry); the second once, since the
  // first failed with everything evicted. (Retries on another port after a
  // bind race are no attempts.)
  EXPECT_EQ(starts - router().count_log("retrying user.x on another port") -
                router().count_log("while user.x started; retrying"),
            3);
  HttpReply resting = chat(port(), "user.x");
  EXPECT_EQ(resting.status, 500) << resting.body;
  EXPECT_EQ(resting.json()["error"]["code"], "model_load_error") << resting.body;
  EXPECT_NE(resting.body.find("boom: bad file"), std::string::npos) << "the last load error";
  ASSERT_TRUE(resting.has_header("Retry-After")) << resting.body;
  int seconds = std::stoi(resting.header("Retry-After"));
  EXPECT_GE(seconds, 1);
  EXPECT_LE(seconds, 5);
  EXPECT_EQ(router().count_log("starting user.x"), starts) << "nothing was started";

  HttpReply explicit_load = load(port(), "user.x");
  EXPECT_EQ(explicit_load.status, 500) << explicit_load.body;
  EXPECT_GT(router().count_log("starting user.x"), starts) << "/load tries at once";
}

}  // namespace
}  // namespace lemon::testing
