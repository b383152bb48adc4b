// SessionTable and choose_pin: pins spread over servers and
// slots, the FIFO line per model when every slot is taken, the slot reserved
// on its server as the session is created, busy and unknown sessions,
// turns that grow the history only when they succeed, and the TTL.
#include "lemon/sessions/session_table.h"

#include <future>
#include <mutex>

#include <gtest/gtest.h>

namespace lemon {
namespace {

using namespace std::chrono_literals;

TEST(ChoosePin, TakesTheLowestFreeSlotOfTheLeastPinnedServer) {
  const std::vector<PinnableServer> servers = {{7, 2}, {9, 2}};
  EXPECT_EQ(choose_pin(servers, {}), (SessionPin{7, 0}));
  EXPECT_EQ(choose_pin(servers, {{7, 0}}), (SessionPin{9, 0}));
  EXPECT_EQ(choose_pin(servers, {{7, 0}, {9, 0}}), (SessionPin{7, 1}));
  EXPECT_EQ(choose_pin(servers, {{7, 1}, {9, 0}}), (SessionPin{7, 0}));
  EXPECT_EQ(choose_pin(servers, {{7, 0}, {7, 1}, {9, 1}}), (SessionPin{9, 0}));
  EXPECT_FALSE(choose_pin(servers, {{7, 0}, {7, 1}, {9, 0}, {9, 1}}).has_value());
  EXPECT_FALSE(choose_pin({}, {}).has_value()) << "no server: nothing to pin";
}

class SessionTableTest : public ::testing::Test {
 protected:
  std::vector<PinnableServer> servers_ = {{1, 1}};
  std::function<std::vector<PinnableServer>()> servers() {
    return [this] { return servers_; };
  }
  static SessionTable::Clock::time_point soon() { return SessionTable::Clock::now() + 5s; }
};

TEST_F(SessionTableTest, AppendGenerateAndTheHistory) {
  SessionTable table(1h, {});
  auto s = table.create("m", "be brief", {{"temperature", 0.2}}, servers(), soon());
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->id.rfind("sess_", 0), 0u);
  EXPECT_EQ(s->pin, (SessionPin{1, 0}));
  ASSERT_TRUE(table.append(s->id, {{"role", "user"}, {"content", "hi"}}).ok());

  auto turn = table.begin_turn(s->id);
  ASSERT_TRUE(turn.ok());
  EXPECT_EQ(turn->state.history.size(), 1u);
  // While it runs: no second turn, no append.
  EXPECT_EQ(table.begin_turn(s->id).error().code(), ErrorCode::kSessionBusy);
  EXPECT_EQ(table.append(s->id, {{"role", "user"}, {"content", "x"}}).error().code(),
            ErrorCode::kSessionBusy);
  table.end_turn(s->id, TurnResult{"hello", 12, 10, 3});

  auto after = table.get(s->id);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->history.size(), 2u);
  EXPECT_EQ(after->history[1], (nlohmann::json{{"role", "assistant"}, {"content", "hello"}}));
  EXPECT_EQ(after->turns, 1);
  EXPECT_EQ(after->prompt_tokens, 12);
  EXPECT_EQ(after->cached_tokens, 10);
  EXPECT_EQ(after->completion_tokens, 3);
  EXPECT_FALSE(after->generating);
}

TEST_F(SessionTableTest, AFailedOrCancelledTurnLeavesTheHistoryAsItWas) {
  SessionTable table(1h, {});
  auto s = table.create("m", "", nlohmann::json::object(), servers(), soon());
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(table.append(s->id, {{"role", "user"}, {"content", "hi"}}).ok());
  EXPECT_FALSE(*table.cancel(s->id)) << "nothing runs yet";
  auto turn = table.begin_turn(s->id);
  ASSERT_TRUE(turn.ok());
  EXPECT_TRUE(*table.cancel(s->id));
  EXPECT_TRUE(turn->cancel->load()) << "the running turn sees the cancel";
  table.end_turn(s->id, std::nullopt);
  auto after = table.get(s->id);
  EXPECT_EQ(after->history.size(), 1u);
  EXPECT_EQ(after->turns, 0);
  // The next turn starts uncancelled.
  auto next = table.begin_turn(s->id);
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->cancel->load());
}

TEST_F(SessionTableTest, UnknownSessionsAreNotFound) {
  SessionTable table(1h, {});
  EXPECT_EQ(table.get("sess_x").error().code(), ErrorCode::kSessionNotFound);
  EXPECT_EQ(table.append("sess_x", {}).error().code(), ErrorCode::kSessionNotFound);
  EXPECT_EQ(table.begin_turn("sess_x").error().code(), ErrorCode::kSessionNotFound);
  EXPECT_EQ(table.cancel("sess_x").error().code(), ErrorCode::kSessionNotFound);
  EXPECT_EQ(table.remove("sess_x").error().code(), ErrorCode::kSessionNotFound);
  auto s = table.create("m", "", nlohmann::json::object(), servers(), soon());
  ASSERT_TRUE(table.remove(s->id).ok());
  EXPECT_EQ(table.get(s->id).error().code(), ErrorCode::kSessionNotFound) << "deleted";
}

TEST_F(SessionTableTest, WhenEverySlotHoldsASessionCreatorsWaitInLineUntilOneEnds) {
  SessionTable table(1h, {});
  auto first = table.create("m", "", nlohmann::json::object(), servers(), soon());
  ASSERT_TRUE(first.ok());
  // No wait at all: refused at once with a Retry-After.
  auto refused =
      table.create("m", "", nlohmann::json::object(), servers(), SessionTable::Clock::now());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kQueueFull);

  std::promise<void> asked;
  std::atomic<bool> told{false};
  auto watched = [&] {
    if (!told.exchange(true)) {
      asked.set_value();  // the waiter has looked at the servers once
    }
    return servers_;
  };
  auto second = std::async(std::launch::async, [&] {
    return table.create("m", "", nlohmann::json::object(), watched, soon());
  });
  asked.get_future().wait();
  ASSERT_TRUE(table.remove(first->id).ok());
  auto got = second.get();
  ASSERT_TRUE(got.ok()) << got.error().message();
  EXPECT_EQ(got->pin, (SessionPin{1, 0})) << "the freed slot";
}

TEST_F(SessionTableTest, ACreatorWaitsOnlyBehindCreatorsOfItsOwnModel) {
  SessionTable table(1h, {});
  const std::vector<PinnableServer> a_servers = {{1, 1}};
  const std::vector<PinnableServer> b_servers = {{2, 1}};
  auto a = [&] { return a_servers; };
  auto b = [&] { return b_servers; };
  auto first_a = table.create("a", "", nlohmann::json::object(), a, soon());
  ASSERT_TRUE(first_a.ok());

  // A second creator for the full model "a" waits in a's line.
  std::promise<void> asked;
  std::atomic<bool> told{false};
  auto watched_a = [&] {
    if (!told.exchange(true)) {
      asked.set_value();
    }
    return a_servers;
  };
  auto waiting_a = std::async(std::launch::async, [&] {
    return table.create("a", "", nlohmann::json::object(), watched_a, soon());
  });
  asked.get_future().wait();

  // A creator for "b", which has a free slot, goes at once: with a deadline
  // of now it would get kQueueFull if it had to wait behind the "a" creator.
  auto got_b = table.create("b", "", nlohmann::json::object(), b, SessionTable::Clock::now());
  ASSERT_TRUE(got_b.ok()) << got_b.error().message();
  EXPECT_EQ(got_b->pin, (SessionPin{2, 0}));
  // And "b" being full now does not hold up "a": its creator still waits
  // for a's slot and takes it once that session ends.
  ASSERT_TRUE(table.remove(first_a->id).ok());
  auto got_a = waiting_a.get();
  ASSERT_TRUE(got_a.ok()) << got_a.error().message();
  EXPECT_EQ(got_a->pin, (SessionPin{1, 0}));
}

TEST_F(SessionTableTest, TheSlotIsReservedBeforeTheSessionExistsAndAFailedReserveLooksAgain) {
  SessionTable table(1h, {});
  // Server 1 begins to drain after servers() listed it: its reserve fails,
  // and the creator's next look no longer lists it.
  std::vector<PinnableServer> listed = {{1, 1}, {2, 1}};
  std::mutex mu;
  std::vector<SessionPin> tried;
  auto servers = [&] {
    std::lock_guard lock(mu);
    return listed;
  };
  auto reserve = [&](const SessionPin& pin) {
    std::lock_guard lock(mu);
    tried.push_back(pin);
    if (pin.server_id == 1) {
      listed = {{2, 1}};
      return false;
    }
    return true;
  };
  auto s = table.create("m", "", nlohmann::json::object(), servers, soon(), {}, reserve);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->pin, (SessionPin{2, 0}));
  EXPECT_EQ(tried, (std::vector<SessionPin>{{1, 0}, {2, 0}}));
  EXPECT_EQ(table.list().size(), 1u) << "no session for the failed reserve";
}

TEST_F(SessionTableTest, IdleSessionsEndAfterTheTtlAndRunningOnesDoNot) {
  // The reaper runs on real time: the TTL is long enough that the busy
  // session's turn begins well within it even on a loaded machine, and a
  // second expiry (if that ever failed) is reported, not a crash.
  std::promise<SessionState> ended;
  std::once_flag first;
  SessionTable table(
      500ms, [&](const SessionState& s) { std::call_once(first, [&] { ended.set_value(s); }); });
  servers_ = {{1, 2}};
  auto busy = table.create("m", "", nlohmann::json::object(), servers(), soon());
  ASSERT_TRUE(busy.ok());
  ASSERT_TRUE(table.begin_turn(busy->id).ok());  // generating: never expires
  auto idle = table.create("m", "", nlohmann::json::object(), servers(), soon());
  ASSERT_TRUE(idle.ok());
  auto future = ended.get_future();
  ASSERT_EQ(future.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(future.get().id, idle->id);
  EXPECT_EQ(table.get(idle->id).error().code(), ErrorCode::kSessionNotFound);
  EXPECT_TRUE(table.get(busy->id).ok());
}

}  // namespace
}  // namespace lemon
