// GET /api/v1/events and GET /logs/stream (issue #12 §1-2) against the real
// router: what the router does arrives as events in order, with ids a client
// can resume from; log lines arrive tagged, filtered and at the log level
// POST /log-level sets; both streams end when the router drains.
#include <csignal>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

using EventsTest = RouterTest;

std::unique_ptr<SseStream> follow(
    int port, const std::string& path,
    const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  auto s = std::make_unique<SseStream>(port, "GET", path, "", headers);
  EXPECT_TRUE(s->read_head());
  EXPECT_EQ(s->status(), 200);
  EXPECT_EQ(s->header("content-type"), "text/event-stream");
  return s;
}

// The next event (not a comment) whose JSON has "type" == type, within
// kWait; the ones before it are appended to *skipped.
std::optional<nlohmann::json> next_of_type(SseStream& s, const std::string& type,
                                           std::vector<nlohmann::json>* skipped = nullptr) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (std::chrono::steady_clock::now() < deadline) {
    auto e = s.next(std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now()));
    if (!e) {
      break;
    }
    if (e->data.empty()) {
      continue;  // a heartbeat
    }
    auto j = nlohmann::json::parse(e->data, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << e->data;
    EXPECT_EQ(e->id, std::to_string(j.value("id", 0))) << "the SSE id is the event's id";
    if (j.value("type", "") == type) {
      return j;
    }
    if (skipped != nullptr) {
      skipped->push_back(j);
    }
  }
  return std::nullopt;
}

// The next event with data, skipping heartbeats, until `deadline`.
std::optional<SseEvent> next_data(SseStream& s, std::chrono::steady_clock::time_point deadline) {
  while (std::chrono::steady_clock::now() < deadline) {
    auto e = s.next(std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now()));
    if (!e) {
      return std::nullopt;
    }
    if (!e->data.empty()) {
      return e;
    }
  }
  return std::nullopt;
}

// The data events a stream replays before its first heartbeat.
std::vector<nlohmann::json> replayed(SseStream& s) {
  std::vector<nlohmann::json> out;
  while (auto e = s.next()) {
    if (e->is_comment()) {
      break;  // the first heartbeat: the replay is over
    }
    if (!e->data.empty()) {  // (the "retry:" frame has no data)
      out.push_back(nlohmann::json::parse(e->data));
    }
  }
  return out;
}

TEST_F(EventsTest, LoadsRequestsAndUnloadsArriveInOrder) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto events = follow(port(), "/api/v1/events");
  ASSERT_EQ(load(port(), "user.a").status, 200);
  auto queued = next_of_type(*events, "load_queued");
  ASSERT_TRUE(queued.has_value());
  EXPECT_EQ((*queued)["model"], "user.a");
  auto started = next_of_type(*events, "load_started");
  ASSERT_TRUE(started.has_value());
  auto loaded = next_of_type(*events, "load_succeeded");
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ((*loaded)["backend_url"], loaded_field(health(port()), "user.a", "backend_url"));
  EXPECT_GE((*loaded)["duration_s"].get<double>(), 0.0);
  EXPECT_LT((*queued)["id"], (*started)["id"]);
  EXPECT_LT((*started)["id"], (*loaded)["id"]);

  ASSERT_EQ(chat(port(), "user.a", {{"max_tokens", 5}}).status, 200);
  auto request = next_of_type(*events, "request");
  ASSERT_TRUE(request.has_value());
  EXPECT_EQ((*request)["model"], "user.a");
  EXPECT_EQ((*request)["route"], "chat/completions");
  EXPECT_EQ((*request)["status"], 200);
  EXPECT_EQ((*request)["stream"], false);
  EXPECT_EQ((*request)["completion_tokens"], 5);

  ASSERT_EQ(http_post(port(), "/api/v1/unload", nlohmann::json{{"model_name", "user.a"}}).status,
            200);
  auto stopped = next_of_type(*events, "server_stopped");
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ((*stopped)["reason"], "unload");

  // A reconnect resumes after the last id it saw; ?backlog replays the last N.
  auto resumed = follow(port(), "/api/v1/events",
                        {{"Last-Event-ID", std::to_string((*started)["id"].get<int>())}});
  // (What the backend reported of its load, backend_state, comes between.)
  auto first = next_data(*resumed, std::chrono::steady_clock::now() + kWait);
  while (first && nlohmann::json::parse(first->data)["type"] == "backend_state") {
    EXPECT_EQ(nlohmann::json::parse(first->data)["model"], "user.a") << first->data;
    first = next_data(*resumed, std::chrono::steady_clock::now() + kWait);
  }
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(nlohmann::json::parse(first->data)["type"], "load_succeeded");
  auto everything = follow(port(), "/api/v1/events?since=0");
  auto all = replayed(*everything);
  ASSERT_FALSE(all.empty());
  auto backlog = follow(port(), "/api/v1/events?backlog=1");
  auto last = replayed(*backlog);
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0]["id"], all.back()["id"]) << "backlog=1 replays the newest event";
  EXPECT_EQ(http_get(port(), "/api/v1/events?since=x").status, 400);
}

TEST_F(EventsTest, FailedLoadsAndCrashesAreEvents) {
  env_.add_llm("a");
  env_.write_sidecar(env_.models_dir() + "/a.gguf",
                     {{"exit_at_start", {{"code", 3}, {"message", "out of luck"}}}});
  env_.add_llm("b");
  env_.write_sidecar(env_.models_dir() + "/b.gguf", {{"crash_on_request", 1}});
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "2"}));
  auto events = follow(port(), "/api/v1/events");
  EXPECT_EQ(load(port(), "user.a").status, 500);
  auto failed = next_of_type(*events, "load_failed");
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ((*failed)["code"], "backend_exited");
  EXPECT_NE((*failed)["message"].get<std::string>().find("out of luck"), std::string::npos)
      << failed->dump();

  // A backend that dies under a request: server_crashed, and the table no
  // longer lists it.
  ASSERT_EQ(load(port(), "user.b").status, 200);
  EXPECT_GE(chat(port(), "user.b").status, 500);
  auto crashed = next_of_type(*events, "server_crashed");
  ASSERT_TRUE(crashed.has_value());
  EXPECT_EQ((*crashed)["model"], "user.b");
  EXPECT_TRUE(eventually([&] {
    return !loaded_field(health(port()), "user.b", "pid").is_number();
  })) << "a crashed server left in the table";
}

TEST_F(EventsTest, ContextUseArrivesWhileSomeoneFollows) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.a", {{"parallel", 2}, {"ctx_size", 1000}}).status, 200);
  auto events = follow(port(), "/api/v1/events");
  ASSERT_EQ(chat(port(), "user.a", {{"max_tokens", 20}}).status, 200);
  std::optional<nlohmann::json> context;
  while ((context = next_of_type(*events, "context"))) {
    if ((*context)["used"].get<int>() > 0) {
      break;
    }
  }
  ASSERT_TRUE(context.has_value()) << "no context event with tokens in use";
  EXPECT_EQ((*context)["model"], "user.a");
  EXPECT_EQ((*context)["total"], 2000);
  ASSERT_EQ((*context)["slots"].size(), 2u);
  EXPECT_EQ((*context)["slots"][0]["n_ctx"], 1000);
  EXPECT_GE((*context)["slots"][0]["used"].get<int>(), 20) << context->dump();
}

// Reads `n` heartbeat comments (each after a second with nothing else to
// send); false if the stream ends or stays silent past kWait.
bool wait_heartbeats(SseStream& s, int n) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (n > 0 && std::chrono::steady_clock::now() < deadline) {
    auto e = s.next(std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now()));
    if (!e) {
      return false;
    }
    if (e->is_comment() && e->comments.front().find("heartbeat") != std::string::npos) {
      --n;
    }
  }
  return n == 0;
}

TEST_F(EventsTest, SlotsAreReadOnlyWhileSomeoneFollowsAndAtMostOnceASecond) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.a", {{"parallel", 2}}).status, 200);
  ASSERT_EQ(chat(port(), "user.a", {{"max_tokens", 10}}).status, 200);
  const std::string url = loaded_field(health(port()), "user.a", "backend_url").get<std::string>();
  auto reads = [&] { return fake_state(url)["slots_reads"].get<long>(); };

  // Nobody follows the events: two heartbeats of the log stream (two quiet
  // seconds) pass without one read of the backend's /slots.
  const long quiet = reads();
  {
    auto logs = follow(port(), "/api/v1/logs/stream?tail=0");
    ASSERT_TRUE(wait_heartbeats(*logs, 2));
  }
  EXPECT_EQ(reads(), quiet) << "/slots was polled with no one watching";

  // A follower: the context comes from /slots, then at most one read a second.
  auto events = follow(port(), "/api/v1/events");
  ASSERT_TRUE(next_of_type(*events, "context").has_value());
  const long first = reads();
  EXPECT_GT(first, quiet);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_heartbeats(*events, 3));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long polled = reads() - first;
  EXPECT_GE(polled, 1) << "the monitor stopped while followed";
  EXPECT_LE(static_cast<double>(polled), seconds + 1.0) << "more than one read a second";

  // The follower leaves: once the router has noticed (at its next write), the
  // polling stops.
  events.reset();
  {
    auto logs = follow(port(), "/api/v1/logs/stream?tail=0");
    ASSERT_TRUE(wait_heartbeats(*logs, 2));
    const long after_leave = reads();
    ASSERT_TRUE(wait_heartbeats(*logs, 2));
    EXPECT_EQ(reads(), after_leave) << "/slots still polled after the follower left";
  }
}

TEST_F(EventsTest, ALateFollowerGetsTheCurrentContextToo) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start_router());
  ASSERT_EQ(load(port(), "user.a", {{"parallel", 1}}).status, 200);
  ASSERT_EQ(chat(port(), "user.a", {{"max_tokens", 10}}).status, 200);
  auto first = follow(port(), "/api/v1/events");
  ASSERT_TRUE(next_of_type(*first, "context").has_value());
  // Nothing changes from now on; a second follower still gets the figures.
  auto second = follow(port(), "/api/v1/events");
  auto context = next_of_type(*second, "context");
  ASSERT_TRUE(context.has_value());
  EXPECT_GT((*context)["used"].get<int>(), 0);
}

TEST_F(EventsTest, LogLinesAreTaggedFilteredAndFollowTheLogLevel) {
  env_.add_llm("a");
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "2"}));
  ASSERT_EQ(chat(port(), "user.a").status, 200);
  ASSERT_EQ(chat(port(), "user.b").status, 200);

  // The backends' own lines, tagged with their model; only user.a's.
  auto only_a = follow(port(), "/api/v1/logs/stream?tail=1000&format=json&model=user.a");
  bool saw_request = false;
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (auto e = next_data(*only_a, deadline)) {  // the line may come after the backlog
    auto line = nlohmann::json::parse(e->data);
    EXPECT_EQ(line["model"], "user.a") << e->data;
    EXPECT_EQ(line["source"], "backend");
    EXPECT_EQ(e->id, std::to_string(line["seq"].get<int>()));
    if (line["text"].get<std::string>().find("POST /v1/chat/completions") != std::string::npos) {
      saw_request = true;
      break;
    }
  }
  EXPECT_TRUE(saw_request) << "user.a's access-log line for the chat never came";

  // Plain text, as Lemonade sends it; the router's own lines at its level.
  EXPECT_EQ(http_post(port(), "/api/v1/log-level", nlohmann::json{{"level", "loud"}}).status, 400);
  auto set = http_post(port(), "/api/v1/log-level", nlohmann::json{{"level", "error"}});
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(set.json()["level"], "error");
  auto text = follow(port(), "/api/v1/logs/stream?tail=0");
  ASSERT_EQ(http_post(port(), "/api/v1/unload", nlohmann::json{{"model_name", "user.b"}}).status,
            200);  // "stopped 'user.b'" is an info line: not shown at "error"
  ASSERT_EQ(http_post(port(), "/api/v1/log-level", nlohmann::json{{"level", "info"}}).status, 200);
  ASSERT_EQ(http_post(port(), "/api/v1/unload", nlohmann::json{{"model_name", "user.a"}}).status,
            200);
  std::vector<std::string> lines;
  while (auto e = next_data(*text, std::chrono::steady_clock::now() + kWait)) {
    lines.push_back(e->data);
    if (e->data.find("stopped 'user.a'") != std::string::npos) {
      break;
    }
  }
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find("INFO  [router] stopped 'user.a'"), std::string::npos)
      << lines.back();
  for (const auto& l : lines) {
    EXPECT_EQ(l.find("stopped 'user.b'"), std::string::npos)
        << "an info line came through at level error: " << l;
  }
}

TEST_F(EventsTest, BothStreamsEndWhenTheRouterDrains) {
  ASSERT_NO_FATAL_FAILURE(start_router());
  auto events = follow(port(), "/api/v1/events");
  auto logs = follow(port(), "/api/v1/logs/stream");
  router().signal(SIGTERM);  // with the default 30 s drain
  events->rest();
  logs->rest();
  EXPECT_TRUE(events->ended_cleanly());
  EXPECT_TRUE(logs->ended_cleanly());
  auto exit = router().wait_exit();
  ASSERT_TRUE(exit.has_value()) << "open event or log streams held the drain";
  EXPECT_EQ(exit->code, 0);
  EXPECT_EQ(router().count_log("drained: no request in flight"), 1) << router().log_text();
}

}  // namespace
}  // namespace lemon::testing
