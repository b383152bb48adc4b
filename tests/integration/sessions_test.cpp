// Sessions against the real router and the fake llama-server (issue #13 §4):
// each turn goes to the session's server and slot with id_slot and
// cache_prompt, so the fake reuses the cached prefix; a session's slot is
// its own while it lives (creators wait when all are taken); cancel keeps
// the history; busy and unknown sessions get 409/404; a session whose
// server went (unloaded, evicted, crashed) continues on its next turn, from
// its restored slot or recomputed from its history (issue #29 §2); idle
// ones end after --session-ttl and their slot's cache is erased; a replica
// that holds sessions is spared by scale-down and keep-alive.
#include <future>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_events.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using SessionsTest = RouterTest;
using Json = nlohmann::json;

const std::string kSessions = "/api/v1/sessions";

Json create_session(int port, const Json& body) {
  HttpReply r = http_post(port, kSessions, body);
  EXPECT_EQ(r.status, 200) << r.body;
  return r.json();
}

HttpReply say(int port, const std::string& id, const std::string& text) {
  return http_post(port, kSessions + "/" + id + "/messages",
                   Json{{"role", "user"}, {"content", text}});
}

HttpReply generate(int port, const std::string& id, const Json& body = Json::object()) {
  return http_post(port, kSessions + "/" + id + "/generate", body);
}

Json session(int port, const std::string& id) {
  return http_get(port, kSessions + "/" + id).json();
}

std::string error_code(const HttpReply& r) {
  Json j = r.json();
  return is_error_envelope(j) ? j["error"]["code"].get<std::string>() : "(not an envelope)";
}

TEST_F(SessionsTest, TurnsGoToThePinnedSlotAndReuseItsCachedPrefix) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.a", {{"parallel", 2}}).status, 200);
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  Json s = create_session(
      port(),
      {{"model", "user.a"}, {"system", "You are terse."}, {"options", {{"temperature", 0.1}}}});
  const std::string id = s["id"];
  // A request without a session is given the slot no session holds.
  ASSERT_EQ(chat(port(), "user.a").status, 200);
  EXPECT_EQ(fake_state(url)["last_request"]["id_slot"], 1 - s["slot"].get<int>());
  ASSERT_EQ(say(port(), id, "What is the capital of France, and why is it there?").status, 200);
  HttpReply first = generate(port(), id, {{"max_tokens", 4}});
  ASSERT_EQ(first.status, 200) << first.body;
  const std::string reply = first.json()["choices"][0]["message"]["content"];
  Json sent = fake_state(url)["last_request"];
  EXPECT_EQ(sent["id_slot"], s["slot"]);
  EXPECT_EQ(sent["cache_prompt"], true);
  EXPECT_EQ(sent["temperature"], 0.1) << "the session's options go with each turn";
  EXPECT_EQ(sent["messages"][0], (Json{{"role", "system"}, {"content", "You are terse."}}));
  EXPECT_EQ(fake_state(url)["last_slot"], s["slot"]);

  // Turn two sends the history (with the reply) and only the new message is
  // evaluated; streamed this time.
  ASSERT_EQ(say(port(), id, "And of Italy?").status, 200);
  SseStream stream(port(), kSessions + "/" + id + "/generate",
                   Json{{"max_tokens", 3}, {"stream", true}}.dump());
  ASSERT_TRUE(stream.read_head());
  EXPECT_EQ(stream.status(), 200);
  auto events = stream.rest();
  ASSERT_TRUE(stream.ended_cleanly());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().data, "[DONE]");
  Json state = fake_state(url);
  EXPECT_EQ(state["last_slot"], s["slot"]);
  EXPECT_GT(state["last_cache_n"].get<int>(), 0) << "the first turn's prefix was reused";

  Json after = session(port(), id);
  ASSERT_EQ(after["history"].size(), 4u) << after.dump();
  EXPECT_EQ(after["history"][1], (Json{{"role", "assistant"}, {"content", reply}}));
  EXPECT_EQ(after["history"][3]["role"], "assistant");
  EXPECT_FALSE(after["history"][3]["content"].get<std::string>().empty());
  EXPECT_EQ(after["turns"], 2);
  EXPECT_EQ(after["tokens"]["cached"], state["last_cache_n"]);
  EXPECT_GT(after["tokens"]["prompt"].get<int>(), after["tokens"]["cached"].get<int>());
  EXPECT_EQ(after["state"], "idle");

  // Ending it erases the slot's cache on the backend.
  HttpReply deleted = http_request(port(), "DELETE", kSessions + "/" + id);
  EXPECT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(fake_state(url)["slots_erased"], 1);
  EXPECT_EQ(error_code(generate(port(), id)), "session_not_found");
}

TEST_F(SessionsTest, EachSessionHoldsASlotAndANewOneWaitsForAFreeSlot) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.a", {{"parallel", 2}}).status, 200);
  Json one = create_session(port(), {{"model", "user.a"}});
  Json two = create_session(port(), {{"model", "user.a"}});
  EXPECT_NE(one["slot"], two["slot"]);
  std::future<HttpReply> third = std::async(std::launch::async, [&] {
    return http_post(port(), kSessions, Json{{"model", "user.a"}});
  });
  EXPECT_EQ(third.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "every slot holds a session: the third waits";
  ASSERT_EQ(http_request(port(), "DELETE", kSessions + "/" + one["id"].get<std::string>()).status,
            200);
  ASSERT_EQ(third.wait_for(kWait), std::future_status::ready);
  HttpReply got = third.get();
  ASSERT_EQ(got.status, 200) << got.body;
  EXPECT_EQ(got.json()["slot"], one["slot"]) << "it took the freed slot";
  Json list = http_get(port(), kSessions).json();
  EXPECT_EQ(list["data"].size(), 2u);
}

TEST_F(SessionsTest, CancelStopsTheTurnAndKeepsTheHistory) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  Json s = create_session(port(), {{"model", "user.a"}});
  const std::string id = s["id"];
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  ASSERT_EQ(say(port(), id, "tell me a long story").status, 200);
  SseStream stream(
      port(), kSessions + "/" + id + "/generate",
      Json{{"stream", true}, {"max_tokens", 50}, {"lemon_fake", {{"stream_chunk_delay_ms", 30000}}}}
          .dump());
  ASSERT_TRUE(stream.read_head());
  ASSERT_TRUE(eventually([&] { return fake_state(url)["active"] == 1; }));
  // While it runs: a second turn and an append are refused.
  EXPECT_EQ(error_code(generate(port(), id)), "session_busy");
  HttpReply busy_append = say(port(), id, "more");
  EXPECT_EQ(busy_append.status, 409);
  EXPECT_EQ(error_code(busy_append), "session_busy");
  EXPECT_EQ(session(port(), id)["state"], "generating");

  HttpReply cancelled = http_post(port(), kSessions + "/" + id + "/cancel", std::string());
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(cancelled.json()["cancelled"], true);
  auto events = stream.rest();
  ASSERT_TRUE(stream.ended_cleanly());
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(Json::parse(events[events.size() - 2].data)["cancelled"], true);
  EXPECT_EQ(events.back().data, "[DONE]");
  ASSERT_TRUE(eventually([&] { return fake_state(url)["active"] == 0; }))
      << "the backend's request was stopped";
  Json after = session(port(), id);
  EXPECT_EQ(after["state"], "idle");
  ASSERT_EQ(after["history"].size(), 1u) << "no partial reply joins the history";
  EXPECT_EQ(after["turns"], 0);
  // The session goes on.
  ASSERT_EQ(generate(port(), id, {{"max_tokens", 2}}).status, 200);
  EXPECT_EQ(session(port(), id)["history"].size(), 2u);
}

TEST_F(SessionsTest, BadInputGetsClearErrorsAndAnUnloadedSessionContinues) {
  env_.add_llm("a");
  env_.add_embedding("e");
  ASSERT_NO_FATAL_FAILURE(start_router());
  EXPECT_EQ(error_code(http_post(port(), kSessions, Json::object())), "invalid_request_error");
  EXPECT_EQ(error_code(http_post(port(), kSessions, Json{{"model", "user.nope"}})),
            "model_not_found");
  EXPECT_EQ(error_code(http_post(port(), kSessions, Json{{"model", "user.e"}})),
            "unsupported_operation");
  EXPECT_EQ(error_code(http_post(port(), kSessions,
                                 Json{{"model", "user.a"}, {"options", {{"max_tokenz", 1}}}})),
            "invalid_request_error");
  HttpReply unknown = generate(port(), "sess_nope");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(error_code(unknown), "session_not_found");
  EXPECT_EQ(http_get(port(), kSessions + "/sess_nope").status, 404);

  Json s = create_session(port(), {{"model", "user.a"}});
  const std::string id = s["id"];
  EXPECT_EQ(error_code(generate(port(), id)), "invalid_request_error") << "no message yet";
  EXPECT_EQ(error_code(http_post(port(), kSessions + "/" + id + "/messages",
                                 Json{{"role", "robot"}, {"content", "x"}})),
            "invalid_request_error");
  ASSERT_EQ(say(port(), id, "hi").status, 200);
  EXPECT_EQ(session(port(), id)["moves"], 0);
  EXPECT_TRUE(session(port(), id)["resumed"].is_null());
  // The server goes (unload) before any turn: its slot held nothing to
  // save, so the next turn loads the model again and computes the history.
  ASSERT_EQ(http_post(port(), "/api/v1/unload", Json{{"model_name", "user.a"}}).status, 200);
  HttpReply moved = generate(port(), id);
  EXPECT_EQ(moved.status, 200) << moved.body;
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.a"}));
  const Json after = session(port(), id);
  EXPECT_EQ(after["moves"], 1) << after.dump();
  EXPECT_EQ(after["resumed"], "recomputed") << after.dump();
  EXPECT_EQ(after["turns"], 1);
}

TEST_F(SessionsTest, AnEvictedSessionContinuesFromItsRestoredSlot) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "1"}));
  RouterEvents events(port());
  Json s = create_session(port(), {{"model", "user.a"}});
  const std::string id = s["id"];
  ASSERT_EQ(say(port(), id, "tell me about lemons, at length, please").status, 200);
  ASSERT_EQ(generate(port(), id, {{"max_tokens", 4}}).status, 200);
  // b's load evicts a: the session's slot is saved whatever its size.
  ASSERT_EQ(chat(port(), "user.b").status, 200);
  ASSERT_TRUE(router().wait_for_log("'user.a': saved slot 0"));
  ASSERT_EQ(say(port(), id, "and limes?").status, 200);
  HttpReply next = generate(port(), id, {{"max_tokens", 4}});
  ASSERT_EQ(next.status, 200) << next.body;
  const Json after = session(port(), id);
  EXPECT_EQ(after["moves"], 1) << after.dump();
  EXPECT_EQ(after["resumed"], "restored") << after.dump();
  EXPECT_GT(after["tokens"]["cached"].get<int>(), 0) << after.dump();
  EXPECT_EQ(after["history"].size(), 4u);
  auto resumed = events.next("session_resumed", "user.a");
  ASSERT_TRUE(resumed.has_value());
  EXPECT_EQ((*resumed)["id"], id);
  EXPECT_EQ((*resumed)["how"], "restored");
}

TEST_F(SessionsTest, IdleSessionsEndAfterTheTtl) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router({"--session-ttl", "0.3"}));
  Json s = create_session(port(), {{"model", "user.a"}});
  const std::string id = s["id"];
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  ASSERT_TRUE(eventually([&] { return http_get(port(), kSessions + "/" + id).status == 404; }));
  EXPECT_TRUE(eventually([&] { return fake_state(url)["slots_erased"] == 1; }))
      << "its slot's cache was erased";
}

Json replica_list(int port, const std::string& model) {
  auto entry = loaded_entry(health(port), model);
  return entry ? (*entry)["replicas"] : Json::array();
}

TEST_F(SessionsTest, AReplicaThatHoldsASessionIsNotScaledDown) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router(
      {"--max-replicas", "2", "--scale-up-after", "0.2", "--scale-down-after", "0.3"}));
  RouterEvents events(port());
  ASSERT_EQ(load(port(), "user.a", {{"parallel", 2}}).status, 200);
  const std::string first_url = loaded_field(health(port()), "user.a", "backend_url");
  const std::string slow =
      chat_body("user.a", {{"lemon_fake", {{"response_delay_ms", 30000}}}}).dump();
  // Both slots of the first replica busy; a third request waits, which
  // starts a second replica, and it serves that request.
  SseStream busy1(port(), "/api/v1/chat/completions", slow);
  SseStream busy2(port(), "/api/v1/chat/completions", slow);
  ASSERT_TRUE(eventually([&] { return fake_state(first_url)["active"] == 2; }));
  SseStream busy3(port(), "/api/v1/chat/completions", slow);
  ASSERT_TRUE(events.next("replica_started", "user.a").has_value());
  Json both = replica_list(port(), "user.a");
  ASSERT_EQ(both.size(), 2u) << both.dump();
  const std::string second_url = both[1]["backend_url"];
  ASSERT_TRUE(eventually([&] { return fake_state(second_url)["active"] == 1; }));
  // While every replica is busy (none can scale down yet), one session on
  // each: the fewest sessions first, so the first on the first replica.
  Json on_first = create_session(port(), {{"model", "user.a"}});
  Json on_second = create_session(port(), {{"model", "user.a"}});
  busy1.disconnect();
  busy2.disconnect();
  busy3.disconnect();
  // Ending the first replica's session leaves it the only one without a
  // session: it goes, although the newest replica would go first without
  // sessions.
  ASSERT_EQ(
      http_request(port(), "DELETE", kSessions + "/" + on_first["id"].get<std::string>()).status,
      200);
  auto stopped = events.next("replica_stopped", "user.a");
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ((*stopped)["reason"], "scale-down");
  Json left = replica_list(port(), "user.a");
  ASSERT_EQ(left.size(), 1u) << left.dump();
  EXPECT_EQ(left[0]["backend_url"], second_url) << "the replica with the session stays";
  // The session goes on there, in its slot.
  const std::string id = on_second["id"];
  ASSERT_EQ(say(port(), id, "still there?").status, 200);
  HttpReply turn = generate(port(), id, {{"max_tokens", 2}});
  EXPECT_EQ(turn.status, 200) << turn.body;
  EXPECT_EQ(fake_state(second_url)["last_request"]["id_slot"], on_second["slot"]);
}

TEST_F(SessionsTest, KeepAliveDoesNotUnloadAModelWhileItHoldsASession) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "2", "--keep-alive", "0.3"}));
  RouterEvents events(port());
  Json s = create_session(port(), {{"model", "user.a"}});
  const std::string id = s["id"];
  ASSERT_EQ(say(port(), id, "hi").status, 200);
  ASSERT_EQ(generate(port(), id, {{"max_tokens", 2}}).status, 200);
  // user.b is used after user.a's last turn, so its keep-alive runs out no
  // sooner than user.a's would (the housekeeper retires expired models in
  // name order: user.a's stop would come first).
  ASSERT_EQ(chat(port(), "user.b").status, 200);
  auto b_stopped = events.next("server_stopped", "user.b");
  ASSERT_TRUE(b_stopped.has_value());
  EXPECT_EQ((*b_stopped)["reason"], "keep-alive");
  EXPECT_EQ(events.count("server_stopped", "user.a"), 0);
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.a"}));
  // The session goes on; once it ends, the keep-alive applies again.
  ASSERT_EQ(say(port(), id, "again").status, 200);
  ASSERT_EQ(generate(port(), id, {{"max_tokens", 2}}).status, 200);
  ASSERT_EQ(http_request(port(), "DELETE", kSessions + "/" + id).status, 200);
  auto a_stopped = events.next("server_stopped", "user.a");
  ASSERT_TRUE(a_stopped.has_value());
  EXPECT_EQ((*a_stopped)["reason"], "keep-alive");
}

TEST_F(SessionsTest, ASessionWhoseServerCrashedContinuesFromItsHistory) {
  const std::string a = env_.add_llm("a");
  env_.write_sidecar(a, {{"crash_on_request", 2}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  Json s = create_session(port(), {{"model", "user.a"}});
  const std::string id = s["id"];
  ASSERT_EQ(say(port(), id, "hi").status, 200);
  ASSERT_EQ(generate(port(), id, {{"max_tokens", 2}}).status, 200);
  ASSERT_EQ(say(port(), id, "and now?").status, 200);
  HttpReply crashed = generate(port(), id, {{"max_tokens", 2}});
  EXPECT_GE(crashed.status, 500) << crashed.body;
  ASSERT_TRUE(eventually([&] { return !loaded_entry(health(port()), "user.a").has_value(); }));
  EXPECT_EQ(session(port(), id)["history"].size(), 3u) << "the failed turn added nothing";
  // A crash saves nothing: the next turn is computed from the history the
  // router holds, on a new server.
  HttpReply again = generate(port(), id);
  EXPECT_EQ(again.status, 200) << again.body;
  const Json after = session(port(), id);
  EXPECT_EQ(after["resumed"], "recomputed") << after.dump();
  EXPECT_EQ(after["history"].size(), 4u);
  EXPECT_EQ(http_request(port(), "DELETE", kSessions + "/" + id).status, 200);
}

TEST_F(SessionsTest, BackToBackRequestsWithoutASessionNeverTakeItsSlot) {
  // A client that sends its next request as soon as it has read the end of
  // the last one ([DONE], or the whole body) finds that request's slot free
  // again: the router releases it before it writes the end. Otherwise the
  // soft reservation would give the new request the session's slot, the
  // only one free, and the session would lose its cache. The fake ends each
  // stream's body 100 ms after its [DONE], as llama-server ends it only
  // after finishing its task.
  const std::string a = env_.add_llm("a");
  env_.write_sidecar(a, {{"stream_end_delay_ms", 100}});
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.a", {{"parallel", 2}}).status, 200);
  const std::string url = loaded_field(health(port()), "user.a", "backend_url");
  Json s = create_session(port(), {{"model", "user.a"}});
  const auto pinned = s["slot"].get<std::size_t>();
  const Json before = fake_state(url)["cached_tokens"][pinned];  // the session has not spoken
  for (int i = 0; i < 20; ++i) {
    if (i % 2 == 0) {
      SseStream stream(port(), "/api/v1/chat/completions",
                       chat_body("user.a", {{"stream", true}, {"max_tokens", 2}}).dump());
      ASSERT_TRUE(stream.read_head());
      ASSERT_EQ(stream.status(), 200);
      std::optional<SseEvent> e;
      while ((e = stream.next()) && !e->is_done()) {
      }
      ASSERT_TRUE(e.has_value()) << "no [DONE]";
      // The next request goes out now, before the rest of this answer is read.
    } else {
      ASSERT_EQ(chat(port(), "user.a", {{"max_tokens", 2}}).status, 200);
    }
  }
  // No request without the session ran on its slot: its cache is untouched.
  Json state = fake_state(url);
  EXPECT_EQ(state["cached_tokens"][pinned], before) << state.dump();
  EXPECT_EQ(state["last_request"]["id_slot"], 1 - static_cast<int>(pinned));
}

}  // namespace
}  // namespace lemon::testing
