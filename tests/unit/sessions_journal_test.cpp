// The session journal: what read_session_journal makes of a
// journal's text (whole records, a torn last record, malformed files), and
// a SessionTable over a SessionJournal that a second table (the router
// started again) reads back lazily, torn ends cut and malformed files kept
// aside, never overwritten.
#include "lemon/sessions/session_journal.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace lemon {
namespace {

using namespace std::chrono_literals;

const std::string kId = "sess_0123456789abcdef0123456789abcdef";

std::string line(const nlohmann::json& record) {
  return record.dump() + "\n";
}

std::string created_line(int slot = 1) {
  SessionState s;
  s.id = kId;
  s.model = "Qwen";
  s.system = "be brief";
  s.options = {{"temperature", 0}};
  s.pin = SessionPin{7, slot};
  s.created_ms = 1000;
  return line(session_created_record(s));
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(ReadSessionJournal, ReplaysEveryRecord) {
  const std::string text =
      created_line() + line(session_message_record({{"role", "user"}, {"content", "hi"}}, 2000)) +
      line(session_turn_record(TurnResult{"hello", 12, 10, 3}, 3000)) +
      line(session_moved_record(0, 4000)) +
      line(session_message_record({{"role", "user"}, {"content", "more"}}, 5000)) +
      line(session_turn_record(TurnResult{"again", 20, 0, 4}, 6000));
  const JournalReading r = read_session_journal(text);
  ASSERT_TRUE(r.state) << r.malformed;
  EXPECT_FALSE(r.torn);
  EXPECT_EQ(r.good_bytes, text.size());
  const SessionState& s = *r.state;
  EXPECT_EQ(s.id, kId);
  EXPECT_EQ(s.model, "Qwen");
  EXPECT_EQ(s.system, "be brief");
  EXPECT_EQ(s.options, (nlohmann::json{{"temperature", 0}}));
  EXPECT_EQ(s.pin, (SessionPin{0, 0})) << "no server yet; the last slot recorded";
  ASSERT_EQ(s.history.size(), 4u);
  EXPECT_EQ(s.history[1], (nlohmann::json{{"role", "assistant"}, {"content", "hello"}}));
  EXPECT_EQ(s.history[3], (nlohmann::json{{"role", "assistant"}, {"content", "again"}}));
  EXPECT_EQ(s.turns, 2);
  EXPECT_EQ(s.moves, 1);
  EXPECT_EQ(s.prompt_tokens, 20);
  EXPECT_EQ(s.cached_tokens, 0);
  EXPECT_EQ(s.completion_tokens, 7);
  EXPECT_EQ(s.created_ms, 1000);
  EXPECT_EQ(s.last_used_ms, 6000);
}

TEST(ReadSessionJournal, DropsATornLastRecord) {
  const std::string good =
      created_line() + line(session_message_record({{"role", "user"}, {"content", "hi"}}, 2000));
  const std::string turn = line(session_turn_record(TurnResult{"hello", 12, 10, 3}, 3000));
  for (std::size_t cut = 1; cut < turn.size(); cut += 7) {
    const JournalReading r = read_session_journal(good + turn.substr(0, cut));
    ASSERT_TRUE(r.state) << "cut at " << cut << ": " << r.malformed;
    EXPECT_TRUE(r.torn);
    EXPECT_EQ(r.good_bytes, good.size());
    EXPECT_EQ(r.state->history.size(), 1u) << "the torn turn is not in the history";
    EXPECT_EQ(r.state->turns, 0);
  }
}

TEST(ReadSessionJournal, MalformedFilesAreNotSessions) {
  const std::string msg = line(session_message_record({{"role", "user"}, {"content", "hi"}}, 2000));
  for (const std::string& text : {std::string(), created_line().substr(0, 10)}) {
    const JournalReading never = read_session_journal(text);
    EXPECT_FALSE(never.state) << "no whole record: " << text;
    EXPECT_TRUE(never.unacknowledged) << "a creation nobody was told of: " << text;
    EXPECT_TRUE(never.malformed.empty()) << text;
  }
  const auto parsed_but_wrong =
      read_session_journal(created_line() + line({{"k", "message"}, {"t", 1}}));
  EXPECT_FALSE(parsed_but_wrong.state) << "a whole last line that is no record is no tear";
  EXPECT_FALSE(parsed_but_wrong.malformed.empty());
  EXPECT_FALSE(read_session_journal(msg + created_line()).state) << "no creation first";
  EXPECT_FALSE(read_session_journal(created_line() + "garbage\n" + msg).state)
      << "a bad record before the last";
  EXPECT_FALSE(read_session_journal(created_line() + created_line() + msg).state)
      << "two creations";
  const auto bad = read_session_journal(created_line() + line({{"k", "message"}, {"t", 1}}) + msg);
  EXPECT_FALSE(bad.state) << "a message without one";
  EXPECT_FALSE(bad.malformed.empty());
}

class SessionJournalTest : public ::testing::Test {
 protected:
  testing::TempDir dir_{"lemon-journal"};
  std::vector<PinnableServer> servers_ = {{1, 2}};
  std::function<std::vector<PinnableServer>()> servers() {
    return [this] { return servers_; };
  }
  std::shared_ptr<SessionJournal> journal(std::vector<std::string>* malformed = nullptr) {
    return std::make_shared<SessionJournal>(
        dir_.path() / "sessions",
        [malformed](const std::string& id, const std::string&, const std::filesystem::path&) {
          if (malformed) {
            malformed->push_back(id);
          }
        });
  }
  static SessionTable::Clock::time_point soon() { return SessionTable::Clock::now() + 5s; }
};

TEST_F(SessionJournalTest, ATableStartedAgainReadsItsSessionsBack) {
  std::string id;
  {
    SessionTable first(1h, {}, journal());
    auto s = first.create("m", "sys", {{"seed", 4}}, servers(), soon());
    ASSERT_TRUE(s.ok());
    id = s->id;
    ASSERT_TRUE(first.append(id, {{"role", "user"}, {"content", "one"}}).ok());
    ASSERT_TRUE(first.begin_turn(id).ok());
    first.end_turn(id, TurnResult{"two", 5, 0, 2});
    ASSERT_TRUE(first.append(id, {{"role", "user"}, {"content", "three"}}).ok());
    ASSERT_TRUE(first.begin_turn(id).ok());
    first.end_turn(id, std::nullopt);  // a failed turn leaves no record
  }
  SessionTable again(1h, {}, journal());
  auto back = again.get(id);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->model, "m");
  EXPECT_EQ(back->system, "sys");
  EXPECT_EQ(back->options, (nlohmann::json{{"seed", 4}}));
  ASSERT_EQ(back->history.size(), 3u);
  EXPECT_EQ(back->history[2], (nlohmann::json{{"role", "user"}, {"content", "three"}}));
  EXPECT_EQ(back->turns, 1);
  EXPECT_EQ(back->pin.server_id, 0u) << "no server until its next turn moves it";

  // It moves like a session whose server went, and the move is journaled.
  auto pin = again.move_to_free_slot(id, servers(), {});
  ASSERT_TRUE(pin.ok());
  EXPECT_EQ(*pin, (SessionPin{1, 0}));
  auto removed = again.remove(id);
  ASSERT_TRUE(removed.ok());
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "sessions" / (id + ".jsonl")))
      << "a deleted session's journal goes with it";
  SessionTable third(1h, {}, journal());
  EXPECT_EQ(third.get(id).error().code(), ErrorCode::kSessionNotFound);
}

TEST_F(SessionJournalTest, ANewSessionSparesTheSlotASessionReadBackComesBackTo) {
  servers_ = {{1, 3}};
  std::string a;
  std::string b;
  {
    SessionTable first(1h, {}, journal());
    a = first.create("m", "", nlohmann::json::object(), servers(), soon())->id;
    b = first.create("m", "", nlohmann::json::object(), servers(), soon())->id;
    ASSERT_EQ(first.get(b)->pin, (SessionPin{1, 1}));
  }
  SessionTable again(1h, {}, journal());
  ASSERT_EQ(again.list().size(), 2u);
  servers_ = {{7, 3}};  // the model's new server
  ASSERT_EQ(*again.move_to_free_slot(a, servers(), {}), (SessionPin{7, 0}));
  // b has not moved yet: its slot 1 (maybe restored) is left to it...
  auto c = again.create("m", "", nlohmann::json::object(), servers(), soon());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->pin, (SessionPin{7, 2}));
  // ...unless nothing else is free.
  auto d = again.create("m", "", nlohmann::json::object(), servers(), soon());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->pin, (SessionPin{7, 1}));
}

TEST_F(SessionJournalTest, ListingReadsEverySessionBack) {
  std::set<std::string> ids;
  {
    SessionTable first(1h, {}, journal());
    for (int i = 0; i < 2; ++i) {
      auto s = first.create("m", "", nlohmann::json::object(), servers(), soon());
      ASSERT_TRUE(s.ok());
      ids.insert(s->id);
    }
  }
  SessionTable again(1h, {}, journal());
  std::set<std::string> listed;
  for (const auto& s : again.list()) {
    listed.insert(s.id);
  }
  EXPECT_EQ(listed, ids);
}

TEST_F(SessionJournalTest, ATornEndIsCutAndTheSessionGoesOn) {
  std::string id;
  {
    SessionTable first(1h, {}, journal());
    auto s = first.create("m", "", nlohmann::json::object(), servers(), soon());
    ASSERT_TRUE(s.ok());
    id = s->id;
    ASSERT_TRUE(first.append(id, {{"role", "user"}, {"content", "kept"}}).ok());
  }
  const auto file = dir_.path() / "sessions" / (id + ".jsonl");
  const std::string whole = read_text(file);
  {
    std::ofstream out(file, std::ios::binary | std::ios::app);
    out << R"({"k":"turn","t":5,"reply":"cut sh)";  // a crash mid-write
  }
  SessionTable again(1h, {}, journal());
  auto back = again.get(id);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->history.size(), 1u);
  EXPECT_EQ(read_text(file), whole) << "cut back to its whole records";
  ASSERT_TRUE(again.append(id, {{"role", "user"}, {"content", "next"}}).ok());
  const JournalReading r = read_session_journal(read_text(file));
  ASSERT_TRUE(r.state);
  EXPECT_FALSE(r.torn);
  EXPECT_EQ(r.state->history.size(), 2u);
}

TEST_F(SessionJournalTest, AMalformedFileIsKeptAsideAndReported) {
  const auto sessions = dir_.path() / "sessions";
  dir_.write("sessions/" + kId + ".jsonl", "not a journal\n" + created_line());
  dir_.write("sessions/malformed/" + kId + ".jsonl", "kept before");
  std::vector<std::string> malformed;
  SessionTable table(1h, {}, journal(&malformed));
  EXPECT_EQ(table.get(kId).error().code(), ErrorCode::kSessionNotFound);
  EXPECT_EQ(malformed, std::vector<std::string>{kId});
  EXPECT_FALSE(std::filesystem::exists(sessions / (kId + ".jsonl")));
  EXPECT_EQ(read_text(sessions / "malformed" / (kId + ".jsonl")), "kept before")
      << "an earlier kept file is never overwritten";
  EXPECT_EQ(read_text(sessions / "malformed" / (kId + ".jsonl.1")),
            "not a journal\n" + created_line());
}

TEST_F(SessionJournalTest, ACreationNeverWrittenWholeIsDeletedQuietly) {
  dir_.write("sessions/" + kId + ".jsonl", created_line().substr(0, 20));
  std::vector<std::string> malformed;
  SessionTable table(1h, {}, journal(&malformed));
  EXPECT_EQ(table.get(kId).error().code(), ErrorCode::kSessionNotFound);
  EXPECT_TRUE(malformed.empty()) << "nothing to report";
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "sessions" / (kId + ".jsonl")));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "sessions" / "malformed"));
}

// A log whose appends fail from the n-th on, to see a session stop being
// journaled rather than keep a journal with a hole in it.
class FailingLog final : public SessionLog {
 public:
  explicit FailingLog(int fail_from) : fail_from_(fail_from) {}
  std::vector<JournaledSession> list(std::chrono::milliseconds) override { return {}; }
  std::optional<SessionState> load(const std::string&) override { return std::nullopt; }
  bool append(const std::string&, const nlohmann::json& record, bool) override {
    kinds.push_back(record.at("k").get<std::string>());
    return static_cast<int>(kinds.size()) < fail_from_;
  }
  void erase(const std::string& id) override { erased.push_back(id); }
  std::vector<std::string> kinds;
  std::vector<std::string> erased;

 private:
  const int fail_from_;
};

TEST_F(SessionJournalTest, AFailedRecordEndsTheJournalNotTheSession) {
  auto log = std::make_shared<FailingLog>(3);  // created and one message go through
  SessionTable table(1h, {}, log);
  auto s = table.create("m", "", nlohmann::json::object(), servers(), soon());
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(table.append(s->id, {{"role", "user"}, {"content", "one"}}).ok());
  ASSERT_TRUE(table.append(s->id, {{"role", "user"}, {"content", "two"}}).ok());  // fails
  EXPECT_EQ(log->erased, std::vector<std::string>{s->id}) << "no journal with a hole in it";
  ASSERT_TRUE(table.append(s->id, {{"role", "user"}, {"content", "three"}}).ok());
  EXPECT_EQ(log->kinds, (std::vector<std::string>{"created", "message", "message"}))
      << "nothing written after the failure";
  auto state = table.get(s->id);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->history.size(), 3u) << "the session goes on in memory";
}

TEST_F(SessionJournalTest, SessionsPastTheirTtlAreDropped) {
  {
    SessionTable first(1h, {}, journal());
    ASSERT_TRUE(first.create("m", "", nlohmann::json::object(), servers(), soon()).ok());
  }
  const auto sessions = dir_.path() / "sessions";
  auto count = [&] {
    std::size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(sessions)) {
      n += e.path().extension() == ".jsonl" ? 1 : 0;
    }
    return n;
  };
  ASSERT_EQ(count(), 1u);
  for (const auto& e : std::filesystem::directory_iterator(sessions)) {
    std::filesystem::last_write_time(e.path(), std::filesystem::file_time_type::clock::now() - 2h);
  }
  SessionTable again(1h, {}, journal());
  EXPECT_TRUE(again.list().empty());
  EXPECT_EQ(count(), 0u) << "idle past the TTL while the router was down";
}

TEST_F(SessionJournalTest, AnUnreadSessionStillEndsByItsTtl) {
  std::string id;
  {
    SessionTable first(1h, {}, journal());
    auto s = first.create("m", "", nlohmann::json::object(), servers(), soon());
    ASSERT_TRUE(s.ok());
    id = s->id;
  }
  const auto file = dir_.path() / "sessions" / (id + ".jsonl");
  SessionTable again(200ms, {}, journal());
  // Never asked for: the reaper ends it and deletes its journal.
  for (int i = 0; i < 500 && std::filesystem::exists(file); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_FALSE(std::filesystem::exists(file));
  EXPECT_EQ(again.get(id).error().code(), ErrorCode::kSessionNotFound);
}

}  // namespace
}  // namespace lemon
