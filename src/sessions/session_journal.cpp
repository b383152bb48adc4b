#include "lemon/sessions/session_journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "lemon/core/clock.h"
#include "lemon/core/log.h"

namespace lemon {
namespace {

bool is_int(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer();
}

bool is_text(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string();
}

// Applies one record to `s`; false when the record is not one this journal
// writes (or lacks a field).
bool apply_record(const nlohmann::json& r, bool first, SessionState& s) {
  if (!r.is_object() || !is_text(r, "k") || !is_int(r, "t")) {
    return false;
  }
  const std::string& kind = r.at("k").get_ref<const std::string&>();
  const std::int64_t t = r.at("t").get<std::int64_t>();
  if (first != (kind == "created")) {
    return false;  // "created" comes first, and only first
  }
  if (kind == "created") {
    if (!is_text(r, "id") || !is_session_id(r.at("id").get_ref<const std::string&>()) ||
        !is_text(r, "model") || !is_text(r, "system") || !r.contains("options") ||
        !r.at("options").is_object() || !is_int(r, "slot") || r.at("slot").get<int>() < 0) {
      return false;
    }
    s.id = r.at("id").get<std::string>();
    s.model = r.at("model").get<std::string>();
    s.system = r.at("system").get<std::string>();
    s.options = r.at("options");
    if (auto owner = r.find("owner"); owner != r.end()) {
      if (!owner->is_string()) {
        return false;
      }
      s.owner = owner->get<std::string>();
    }
    s.pin = SessionPin{0, r.at("slot").get<int>()};
    s.created_ms = t;
  } else if (kind == "message") {
    auto m = r.find("message");
    if (m == r.end() || !m->is_object() || !is_text(*m, "role") || !is_text(*m, "content")) {
      return false;
    }
    s.history.push_back(*m);
  } else if (kind == "turn") {
    if (!is_text(r, "reply") || !is_int(r, "prompt_tokens") || !is_int(r, "cached_tokens") ||
        !is_int(r, "completion_tokens")) {
      return false;
    }
    s.history.push_back({{"role", "assistant"}, {"content", r.at("reply")}});
    ++s.turns;
    s.prompt_tokens = r.at("prompt_tokens").get<std::int64_t>();
    s.cached_tokens = r.at("cached_tokens").get<std::int64_t>();
    s.completion_tokens += r.at("completion_tokens").get<std::int64_t>();
  } else if (kind == "moved") {
    if (!is_int(r, "slot") || r.at("slot").get<int>() < 0) {
      return false;
    }
    s.pin.backend_slot = r.at("slot").get<int>();
    ++s.moves;
  } else {
    return false;
  }
  s.last_used_ms = t;
  return true;
}

std::string record_line(const nlohmann::json& record) {
  // Invalid UTF-8 in a reply (a token cut by max_tokens) is replaced, never
  // a throw.
  return record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

bool sync_dir(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

bool is_session_id(std::string_view id) {
  constexpr std::string_view kPrefix = "sess_";
  if (id.size() != kPrefix.size() + 32 || id.substr(0, kPrefix.size()) != kPrefix) {
    return false;
  }
  for (char c : id.substr(kPrefix.size())) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return true;
}

nlohmann::json session_created_record(const SessionState& s) {
  nlohmann::json record = {{"k", "created"},
                           {"t", s.created_ms},
                           {"id", s.id},
                           {"model", s.model},
                           {"system", s.system},
                           {"options", s.options},
                           {"slot", s.pin.backend_slot}};
  if (!s.owner.empty()) {
    record["owner"] = s.owner;
  }
  return record;
}

nlohmann::json session_message_record(const nlohmann::json& message, std::int64_t t) {
  return {{"k", "message"}, {"t", t}, {"message", message}};
}

nlohmann::json session_turn_record(const TurnResult& r, std::int64_t t) {
  return {{"k", "turn"},
          {"t", t},
          {"reply", r.reply},
          {"prompt_tokens", r.prompt_tokens},
          {"cached_tokens", r.cached_tokens},
          {"completion_tokens", r.completion_tokens}};
}

nlohmann::json session_moved_record(int slot, std::int64_t t) {
  return {{"k", "moved"}, {"t", t}, {"slot", slot}};
}

JournalReading read_session_journal(std::string_view text) {
  JournalReading out;
  SessionState s;
  std::size_t pos = 0;
  bool first = true;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const bool last = nl == std::string_view::npos || nl + 1 == text.size();
    const std::string_view line =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    const bool complete = nl != std::string_view::npos;
    if (last && (!complete || record.is_discarded())) {
      // The write a crash cut (one write(2) per record: only the last can
      // be cut): dropped. A creation cut is a session never acknowledged.
      out.torn = true;
      out.unacknowledged = first;
      break;
    }
    if (record.is_discarded() || !apply_record(record, first, s)) {
      out.malformed = first ? "its first record is not a session's creation"
                            : "record at byte " + std::to_string(pos) + " is not a journal record";
      return out;
    }
    first = false;
    pos = nl + 1;
    out.good_bytes = pos;
  }
  if (first) {
    out.unacknowledged = true;  // empty, or only a cut creation
    return out;
  }
  out.state = std::move(s);
  return out;
}

SessionJournal::SessionJournal(std::filesystem::path dir, MalformedReport on_malformed)
    : dir_(std::move(dir)), on_malformed_(std::move(on_malformed)) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) {
    logger("router")->warn("sessions will not outlive the router: cannot create {}: {}",
                           dir_.string(), ec.message());
  }
}

std::filesystem::path SessionJournal::path_of(const std::string& id) const {
  return dir_ / (id + ".jsonl");
}

std::vector<JournaledSession> SessionJournal::list(std::chrono::milliseconds ttl) {
  std::vector<JournaledSession> out;
  std::error_code ec;
  const std::int64_t now = unix_ms_now();
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::filesystem::path& p = entry.path();
    const std::string id = p.stem().string();
    if (p.extension() != ".jsonl" || !is_session_id(id)) {
      continue;
    }
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    const std::int64_t mtime_ms =
        static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
    if (now - mtime_ms >= ttl.count()) {
      std::filesystem::remove(p, ec);  // idle past its TTL while the router was down
      continue;
    }
    out.push_back({id, mtime_ms});
  }
  return out;
}

std::optional<SessionState> SessionJournal::load(const std::string& id) {
  const std::filesystem::path p = path_of(id);
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  in.close();
  JournalReading reading = read_session_journal(text.str());
  if (reading.unacknowledged) {
    // The crash came before its creation was written whole: nobody was
    // told of this session.
    logger("router")->info("session {}: its creation was never written whole; dropped", id);
    erase(id);
    return std::nullopt;
  }
  if (!reading.state || reading.state->id != id) {
    keep_aside(id, reading.state ? "it names another session" : reading.malformed);
    return std::nullopt;
  }
  if (reading.torn) {
    // Cut back to the last whole record, so the next append starts clean.
    if (::truncate(p.c_str(), static_cast<off_t>(reading.good_bytes)) != 0) {
      logger("router")->warn("session {}: cannot cut its journal's torn end: {}", id,
                             std::strerror(errno));
    }
    logger("router")->warn("session {}: its journal's last record was torn (a crash?); dropped",
                           id);
  }
  return std::move(reading.state);
}

bool SessionJournal::append(const std::string& id, const nlohmann::json& record, bool create) {
  const std::filesystem::path p = path_of(id);
  const int flags = O_WRONLY | O_APPEND | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0);
  const int fd = ::open(p.c_str(), flags, 0600);
  if (fd < 0) {
    if (create || errno != ENOENT) {
      logger("router")->warn("session {}: journal not written: {}", id, std::strerror(errno));
    }
    return false;
  }
  const std::string line = record_line(record);
  std::size_t done = 0;
  bool ok = true;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      ok = false;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  ok = ok && ::fdatasync(fd) == 0;
  if (!ok) {
    // A partial line (a full disk) is cut off again, so the file stays a
    // sequence of whole records.
    logger("router")->warn("session {}: journal record not written: {}", id, std::strerror(errno));
    struct stat st {};
    if (done > 0 && ::fstat(fd, &st) == 0) {
      (void)::ftruncate(fd, st.st_size - static_cast<off_t>(done));
    }
  }
  ::close(fd);
  if (ok && create) {
    sync_dir(dir_);  // the new file's name survives a crash too
  } else if (!ok && create) {
    ::unlink(p.c_str());  // no journal rather than one without its creation
  }
  return ok;
}

void SessionJournal::erase(const std::string& id) {
  std::error_code ec;
  std::filesystem::remove(path_of(id), ec);
}

void SessionJournal::keep_aside(const std::string& id, const std::string& why) {
  std::error_code ec;
  const std::filesystem::path aside_dir = dir_ / "malformed";
  std::filesystem::create_directories(aside_dir, ec);
  std::filesystem::path target = aside_dir / (id + ".jsonl");
  for (int n = 1; std::filesystem::exists(target, ec); ++n) {
    target = aside_dir / (id + ".jsonl." + std::to_string(n));  // never overwrite one kept before
  }
  std::filesystem::rename(path_of(id), target, ec);
  if (ec) {
    target.clear();
  }
  logger("router")->error("session {}: its journal is malformed ({}); kept as {}", id, why,
                          target.empty() ? std::string("(could not move it)") : target.string());
  if (on_malformed_) {
    on_malformed_(id, why, target);
  }
}

}  // namespace lemon
