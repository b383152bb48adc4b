#include "fake_hub.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <httplib.h>
#include <openssl/evp.h>

#include <nlohmann/json.hpp>

#include "fake_task_queue.h"

namespace fake {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kLfsMinSize = 10ull << 20;       // larger files are LFS whatever their name
constexpr std::size_t kChunk = std::size_t{256} * 1024;  // bytes per write of a file body
constexpr auto kStallPoll = std::chrono::milliseconds(10);

// ---- hashing ---------------------------------------------------------------------------------

std::string to_hex(const unsigned char* d, unsigned n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(std::size_t{2} * n);
  for (unsigned i = 0; i < n; ++i) {
    out += kDigits[d[i] >> 4];
    out += kDigits[d[i] & 0xf];
  }
  return out;
}

class Digest {
 public:
  explicit Digest(const EVP_MD* md) : ctx_(EVP_MD_CTX_new()) {
    EVP_DigestInit_ex(ctx_, md, nullptr);
  }
  ~Digest() { EVP_MD_CTX_free(ctx_); }
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;

  void update(const void* p, std::size_t n) { EVP_DigestUpdate(ctx_, p, n); }
  std::string hex() {
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_DigestFinal_ex(ctx_, d, &n);
    return to_hex(d, n);
  }

 private:
  EVP_MD_CTX* ctx_;
};

std::string digest_hex(const EVP_MD* md, std::string_view text) {
  Digest d(md);
  d.update(text.data(), text.size());
  return d.hex();
}

struct Hashes {
  std::string sha256;
  std::string blob_id;  // git's blob sha1: sha1("blob <size>\0" + content)
};

// One streamed pass over the file feeds both digests.
Hashes hash_file(const std::string& path, std::uint64_t size) {
  Digest sha256(EVP_sha256());
  Digest sha1(EVP_sha1());
  const std::string header = "blob " + std::to_string(size);
  sha1.update(header.c_str(), header.size() + 1);  // with its NUL
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    std::vector<char> buf(1 << 20);
    ssize_t n = 0;
    while ((n = ::read(fd, buf.data(), buf.size())) > 0) {
      sha256.update(buf.data(), static_cast<std::size_t>(n));
      sha1.update(buf.data(), static_cast<std::size_t>(n));
    }
    ::close(fd);
  }
  return {sha256.hex(), sha1.hex()};
}

bool is_lfs(std::string_view rel, std::uint64_t size) {
  for (std::string_view ext : {".gguf", ".bin", ".safetensors", ".onnx", ".pt", ".data"}) {
    if (rel.ends_with(ext)) {
      return true;
    }
  }
  return size > kLfsMinSize;
}

// ---- names -----------------------------------------------------------------------------------

std::vector<std::string_view> split_path(std::string_view p) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t slash = p.find('/', start);
    out.push_back(p.substr(start, slash == std::string_view::npos ? p.npos : slash - start));
    if (slash == std::string_view::npos) {
      return out;
    }
    start = slash + 1;
  }
}

// A relative path that stays inside its folder and names no dot-entry at the
// top (those are the hub's own files, like .fake.json).
bool is_safe_rel(std::string_view rel) {
  std::vector<std::string_view> parts = split_path(rel);
  for (std::string_view part : parts) {
    if (part.empty() || part == "." || part == "..") {
      return false;
    }
  }
  return parts.front().front() != '.';
}

bool is_repo_part(std::string_view part) {
  return !part.empty() && part.front() != '.' && part.find('/') == std::string_view::npos;
}

// Percent-encodes everything but unreserved characters and '/'.
std::string escape_path(std::string_view p) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : p) {
    if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kDigits[c >> 4];
      out += kDigits[c & 0xf];
    }
  }
  return out;
}

struct FileInfo {
  std::string rel;   // path in the repository, '/'-separated
  std::string path;  // on disk
  std::uint64_t size = 0;
  Hashes hashes;
  bool lfs = false;
};

// ---- knobs -----------------------------------------------------------------------------------

struct Rule {
  std::string path = "*";  // "org/name/file", "org/name" (listing knobs) or "*"
  int status = 0;
  std::optional<std::uint64_t> drop_after;
  bool corrupt = false;
  std::uint64_t bytes_per_sec = 0;
  std::optional<std::uint64_t> stall_after;
  std::int64_t times = -1;  // -1: unlimited
  int api_status = 0;
  std::optional<std::uint64_t> declared_size;
  std::vector<std::string> extra_siblings;

  // Listing rules shape the API answer; the others shape file transfers.
  bool is_listing_rule() const {
    return api_status != 0 || declared_size.has_value() || !extra_siblings.empty();
  }
  bool matches(const std::string& key) const { return path == "*" || path == key; }
};

int http_status(const json& v, const char* name) {
  int s = v.get<int>();
  if (s < 100 || s > 599) {
    throw std::invalid_argument(std::string(name) + " must be an HTTP status");
  }
  return s;
}

Rule parse_rule(const json& r) {
  if (!r.is_object()) {
    throw std::invalid_argument("a rule must be a JSON object");
  }
  static const std::set<std::string> kKeys = {
      "path",  "status",     "drop_after_bytes",  "corrupt",       "bytes_per_sec",
      "times", "api_status", "stall_after_bytes", "declared_size", "extra_siblings"};
  for (const auto& item : r.items()) {
    if (kKeys.count(item.key()) == 0) {
      throw std::invalid_argument("unknown knob '" + item.key() + "'");
    }
  }
  Rule rule;
  rule.path = r.value("path", std::string("*"));
  if (r.contains("status")) {
    rule.status = http_status(r["status"], "status");
  }
  if (r.contains("api_status")) {
    rule.api_status = http_status(r["api_status"], "api_status");
  }
  if (r.contains("drop_after_bytes")) {
    rule.drop_after = r["drop_after_bytes"].get<std::uint64_t>();
  }
  if (r.contains("stall_after_bytes")) {
    rule.stall_after = r["stall_after_bytes"].get<std::uint64_t>();
  }
  if (r.contains("declared_size")) {
    rule.declared_size = r["declared_size"].get<std::uint64_t>();
  }
  rule.corrupt = r.value("corrupt", false);
  rule.bytes_per_sec = r.value("bytes_per_sec", std::uint64_t{0});
  if (r.contains("times")) {
    rule.times = r["times"].get<std::int64_t>();
    if (rule.times < 0) {
      throw std::invalid_argument("times must be >= 0");
    }
  }
  if (r.contains("extra_siblings")) {
    rule.extra_siblings = r["extra_siblings"].get<std::vector<std::string>>();
  }
  return rule;
}

// What the listing rules say about one repository.
struct ListingKnobs {
  int api_status = 0;
  std::optional<std::uint64_t> declared_size;               // every file
  std::map<std::string, std::uint64_t> file_declared_size;  // by repo-relative path
  std::vector<std::string> extra_siblings;
};

// ---- the request log -------------------------------------------------------------------------

struct LogEntry {
  std::string method;
  std::string path;
  std::string query;
  std::string range;
  bool authorization_present = false;
  std::uint64_t bytes_sent = 0;
  int status = 0;
  std::string key;  // "org/name/file", "org/name", or "" for other routes
};

std::string raw_query(const httplib::Request& req) {
  std::size_t q = req.target.find('?');
  return q == std::string::npos ? std::string() : req.target.substr(q + 1);
}

// ---- the hub's state -------------------------------------------------------------------------

class Hub {
 public:
  explicit Hub(std::string root) : root_(std::move(root)) {}

  // -- repositories --

  // Every repository "org/name", sorted.
  std::vector<std::string> repos() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (fs::directory_iterator org(root_, ec), end; !ec && org != end; org.increment(ec)) {
      if (!org->is_directory(ec) || org->path().filename().string().starts_with(".")) {
        continue;
      }
      for (fs::directory_iterator name(org->path(), ec); !ec && name != end; name.increment(ec)) {
        if (name->is_directory(ec)) {
          out.push_back(org->path().filename().string() + "/" + name->path().filename().string());
        }
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  bool repo_exists(const std::string& repo) const {
    std::error_code ec;
    return fs::is_directory(fs::path(root_) / repo, ec);
  }

  // The token of a gated repository ("" when it is public).
  std::string token_of(const std::string& repo) const {
    std::ifstream in(fs::path(root_) / repo / ".fake.json");
    if (!in) {
      return {};
    }
    json j = json::parse(in, nullptr, false);
    if (!j.is_object() || !j.contains("token") || !j["token"].is_string()) {
      return {};
    }
    return j["token"].get<std::string>();
  }

  // Every file of the repository, sorted by path, with its hashes.
  std::vector<FileInfo> files(const std::string& repo) {
    std::vector<FileInfo> out;
    const fs::path dir = fs::path(root_) / repo;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      std::string rel = it->path().lexically_relative(dir).generic_string();
      if (it.depth() == 0 && rel.starts_with(".")) {
        if (it->is_directory(ec)) {
          it.disable_recursion_pending();
        }
        continue;
      }
      if (it->is_regular_file(ec)) {
        if (auto f = info(it->path().string(), rel)) {
          out.push_back(std::move(*f));
        }
      }
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.rel < b.rel; });
    return out;
  }

  // One file (hashing only that one).
  std::optional<FileInfo> file(const std::string& repo, const std::string& rel) {
    if (!is_safe_rel(rel)) {
      return std::nullopt;
    }
    return info((fs::path(root_) / repo / rel).string(), rel);
  }

  // A GitHub release asset: ROOT/_releases/<owner>/<repo>/<tag>/<asset>.
  std::optional<FileInfo> release_asset(const std::string& rel) {
    if (!is_safe_rel(rel)) {
      return std::nullopt;
    }
    return info((fs::path(root_) / "_releases" / rel).string(), rel);
  }

  // The commit: sha1 of the sorted (path, sha256) list.
  static std::string commit_of(const std::vector<FileInfo>& files) {
    std::string text;
    for (const auto& f : files) {
      text += f.rel + '\0' + f.hashes.sha256 + '\n';
    }
    return digest_hex(EVP_sha1(), text);
  }

  // -- knobs --

  void set_rules(std::vector<Rule> rules) {
    std::lock_guard lock(mu_);
    rules_ = std::move(rules);
    ++generation_;
    cv_.notify_all();
  }

  // The first file rule for `key` (one of its `times` is used up), and the
  // knob generation it was taken in. A HEAD request only takes status rules.
  std::pair<std::optional<Rule>, std::uint64_t> take_file_rule(const std::string& key, bool head) {
    std::lock_guard lock(mu_);
    for (Rule& r : rules_) {
      if (r.is_listing_rule() || !r.matches(key) || r.times == 0 || (head && r.status == 0)) {
        continue;
      }
      if (r.times > 0) {
        --r.times;
      }
      return {r, generation_};
    }
    return {std::nullopt, generation_};
  }

  // The listing knobs for `repo`; an api_status rule uses up one of its `times`.
  ListingKnobs listing_knobs(const std::string& repo) {
    std::lock_guard lock(mu_);
    ListingKnobs k;
    for (Rule& r : rules_) {
      if (!r.is_listing_rule() || r.times == 0) {
        continue;
      }
      if (r.path.starts_with(repo + "/")) {
        if (r.declared_size) {
          k.file_declared_size.emplace(r.path.substr(repo.size() + 1), *r.declared_size);
        }
        continue;
      }
      if (!r.matches(repo)) {
        continue;
      }
      if (r.api_status != 0 && k.api_status == 0) {
        k.api_status = r.api_status;
        if (r.times > 0) {
          --r.times;
        }
      }
      if (r.declared_size && !k.declared_size) {
        k.declared_size = r.declared_size;
      }
      k.extra_siblings.insert(k.extra_siblings.end(), r.extra_siblings.begin(),
                              r.extra_siblings.end());
    }
    return k;
  }

  // Holds a transfer of `key` while the knobs stay at `generation`: true once
  // they change (the transfer goes on), false if the hub stops or the client
  // leaves first. Counts as "stalled" for /_fake/wait meanwhile.
  bool stall(const std::string& key, std::uint64_t generation,
             const std::function<bool()>& client_alive) {
    std::unique_lock lock(mu_);
    if (generation_ != generation) {
      return true;
    }
    ++stalled_[key];
    cv_.notify_all();
    bool released = false;
    for (;;) {
      if (generation_ != generation) {
        released = true;
        break;
      }
      if (stopping_) {
        break;
      }
      lock.unlock();
      const bool alive = client_alive();
      lock.lock();
      if (!alive) {
        break;
      }
      cv_.wait_for(lock, kStallPoll, [&] { return generation_ != generation || stopping_; });
    }
    if (--stalled_[key] == 0) {
      stalled_.erase(key);
    }
    return released;
  }

  // -- the log and the waits --

  // Records a request; returns its id for add_sent().
  std::uint64_t log_request(const httplib::Request& req, int status, const std::string& key) {
    LogEntry e;
    e.method = req.method;
    e.path = req.path;
    e.query = raw_query(req);
    e.range = req.get_header_value("Range");
    e.authorization_present = req.has_header("Authorization");
    e.status = status;
    e.key = key;
    std::lock_guard lock(mu_);
    log_.push_back(std::move(e));
    ++request_counts_[key];
    cv_.notify_all();
    return log_base_ + log_.size() - 1;
  }

  void add_sent(std::uint64_t id, std::int64_t n) {
    std::lock_guard lock(mu_);
    if (id >= log_base_ && id - log_base_ < log_.size()) {
      log_[id - log_base_].bytes_sent += static_cast<std::uint64_t>(n);  // wraps back for n < 0
    }
  }

  json log() {
    std::lock_guard lock(mu_);
    json out = json::array();
    for (const LogEntry& e : log_) {
      out.push_back({{"method", e.method},
                     {"path", e.path},
                     {"query", e.query},
                     {"range", e.range},
                     {"authorization_present", e.authorization_present},
                     {"bytes_sent", e.bytes_sent},
                     {"status", e.status}});
    }
    return out;
  }

  // Empties the log and restarts the request counts of /_fake/wait.
  void clear_log() {
    std::lock_guard lock(mu_);
    log_base_ += log_.size();
    log_.clear();
    request_counts_.clear();
  }

  // event "stalled": a transfer of `path` ("*": any) is stalled now.
  // event "request": `count` requests for `path` ("*": any) since the last clear.
  bool wait(const std::string& event, const std::string& path, std::int64_t count,
            std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    bool ok = cv_.wait_for(lock, timeout, [&] {
      if (stopping_) {
        return true;
      }
      if (event == "stalled") {
        return path == "*" ? !stalled_.empty() : stalled_.count(path) > 0;
      }
      if (path == "*") {
        return static_cast<std::int64_t>(log_.size()) >= count;
      }
      auto it = request_counts_.find(path);
      return it != request_counts_.end() && it->second >= count;
    });
    return ok && !stopping_;
  }

  void stop() {
    std::lock_guard lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }

 private:
  std::optional<FileInfo> info(const std::string& path, const std::string& rel) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return std::nullopt;
    }
    FileInfo f;
    f.rel = rel;
    f.path = path;
    f.size = static_cast<std::uint64_t>(st.st_size);
    f.lfs = is_lfs(rel, f.size);
    const std::string key = path + '\0' + std::to_string(f.size) + '\0' +
                            std::to_string(st.st_mtim.tv_sec) + '.' +
                            std::to_string(st.st_mtim.tv_nsec);
    f.hashes = hashes(path, f.size, key);
    return f;
  }

  // Cached by (path, size, mtime); a file is hashed by one thread at a time.
  Hashes hashes(const std::string& path, std::uint64_t size, const std::string& key) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return hashing_.count(key) == 0; });
    if (auto it = hash_cache_.find(key); it != hash_cache_.end()) {
      return it->second;
    }
    hashing_.insert(key);
    lock.unlock();
    Hashes h = hash_file(path, size);
    lock.lock();
    hashing_.erase(key);
    hash_cache_[key] = h;
    cv_.notify_all();
    return h;
  }

  const std::string root_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Hashes> hash_cache_;
  std::set<std::string> hashing_;
  std::vector<Rule> rules_;
  std::uint64_t generation_ = 0;
  std::vector<LogEntry> log_;
  std::uint64_t log_base_ = 0;
  std::map<std::string, std::int64_t> request_counts_;
  std::map<std::string, int> stalled_;
  bool stopping_ = false;
};

// ---- answers ---------------------------------------------------------------------------------

void reply_json(httplib::Response& res, int status, const json& j) {
  res.status = status;
  res.set_content(j.dump(), "application/json");
}

void not_found(httplib::Response& res, const char* code, const std::string& message) {
  reply_json(res, 404, {{"error", message}});
  res.set_header("X-Error-Code", code);
}

// 401 (no token) or 403 (a wrong one) for a gated repository; 0 when allowed.
int auth_status(const Hub& hub, const std::string& repo, const httplib::Request& req) {
  const std::string token = hub.token_of(repo);
  if (token.empty()) {
    return 0;
  }
  if (!req.has_header("Authorization")) {
    return 401;
  }
  return req.get_header_value("Authorization") == "Bearer " + token ? 0 : 403;
}

void deny(httplib::Response& res, int status, const std::string& repo) {
  reply_json(res, status,
             {{"error", "Access to model " + repo +
                            " is restricted. You must have access to it and be "
                            "authenticated to access it. Please log in."}});
  res.set_header("X-Error-Code", "GatedRepo");
}

struct ByteRange {
  std::uint64_t first = 0;
  std::uint64_t last = 0;  // inclusive
};
enum class RangeKind { kNone, kRange, kUnsatisfiable };

bool parse_u64(std::string_view s, std::uint64_t& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

// "bytes=N-", "bytes=N-M" and "bytes=-N" (the last N bytes). Several ranges
// are not supported (416); a header that is not a byte range is ignored.
RangeKind parse_range(const std::string& header, std::uint64_t size, ByteRange& out) {
  if (!header.starts_with("bytes=")) {
    return RangeKind::kNone;
  }
  std::string_view spec = std::string_view(header).substr(6);
  while (!spec.empty() && spec.front() == ' ') {
    spec.remove_prefix(1);
  }
  if (spec.find(',') != std::string_view::npos) {
    return RangeKind::kUnsatisfiable;
  }
  std::size_t dash = spec.find('-');
  if (dash == std::string_view::npos) {
    return RangeKind::kNone;
  }
  std::string_view a = spec.substr(0, dash);
  std::string_view b = spec.substr(dash + 1);
  std::uint64_t x = 0;
  std::uint64_t y = 0;
  if (a.empty()) {
    if (!parse_u64(b, y)) {
      return RangeKind::kNone;
    }
    if (y == 0 || size == 0) {
      return RangeKind::kUnsatisfiable;
    }
    out = {size - std::min(y, size), size - 1};
    return RangeKind::kRange;
  }
  if (!parse_u64(a, x) || (!b.empty() && !parse_u64(b, y))) {
    return RangeKind::kNone;
  }
  if (x >= size || (!b.empty() && y < x)) {
    return RangeKind::kUnsatisfiable;
  }
  out = {x, b.empty() ? size - 1 : std::min(y, size - 1)};
  return RangeKind::kRange;
}

// One file body being sent, under the knobs of its rule.
class Transfer {
 public:
  Transfer(Hub& hub, int fd, Rule rule, std::uint64_t generation, std::uint64_t first,
           std::uint64_t length, std::uint64_t log_id, std::string key)
      : hub_(hub),
        fd_(fd),
        rule_(std::move(rule)),
        generation_(generation),
        first_(first),
        length_(length),
        log_id_(log_id),
        key_(std::move(key)),
        throttle_start_(Clock::now()) {}
  ~Transfer() { ::close(fd_); }
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  // httplib's content provider: `sent` body bytes are out; false drops the connection.
  bool provide(std::uint64_t sent, httplib::DataSink& sink) {
    if (sent >= length_) {
      return true;
    }
    std::uint64_t limit = length_;
    if (rule_.drop_after) {
      if (sent >= *rule_.drop_after) {
        return false;
      }
      limit = std::min(limit, *rule_.drop_after);
    }
    if (rule_.stall_after && !stalled_) {
      if (sent >= *rule_.stall_after) {
        stalled_ = true;
        if (!hub_.stall(key_, generation_, [&sink] { return sink.is_writable(); })) {
          return false;
        }
        throttle_start_ = Clock::now();  // the throttle restarts after the stall
        throttle_base_ = sent;
      } else {
        limit = std::min(limit, *rule_.stall_after);
      }
    }
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(limit - sent, kChunk));
    if (rule_.bytes_per_sec > 0) {
      want = std::min<std::size_t>(
          want, static_cast<std::size_t>(std::max<std::uint64_t>(1, rule_.bytes_per_sec / 20)));
      std::this_thread::sleep_until(
          throttle_start_ +
          std::chrono::microseconds((sent - throttle_base_) * 1000000 / rule_.bytes_per_sec));
    }
    buf_.resize(want);
    ssize_t n = ::pread(fd_, buf_.data(), want, static_cast<off_t>(first_ + sent));
    if (n <= 0) {
      return false;  // the file shrank under us
    }
    const std::uint64_t got = static_cast<std::uint64_t>(n);
    if (rule_.corrupt) {
      const std::uint64_t at = length_ / 2;  // the middle of this body
      if (at >= sent && at < sent + got) {
        buf_[at - sent] = static_cast<char>(~buf_[at - sent]);
      }
    }
    // Counted first, so the log has them by the time the client has them.
    hub_.add_sent(log_id_, static_cast<std::int64_t>(got));
    if (!sink.write(buf_.data(), static_cast<std::size_t>(got))) {
      hub_.add_sent(log_id_, -static_cast<std::int64_t>(got));
      return false;
    }
    return true;
  }

 private:
  Hub& hub_;
  const int fd_;
  const Rule rule_;
  const std::uint64_t generation_;
  const std::uint64_t first_;
  const std::uint64_t length_;
  const std::uint64_t log_id_;
  const std::string key_;
  Clock::time_point throttle_start_;  // the throttle counts from here ...
  std::uint64_t throttle_base_ = 0;   // ... and from this many bytes sent
  bool stalled_ = false;
  std::vector<char> buf_;
};

// The bytes of `f` (with Range and the file knobs of `key`).
void serve_bytes(Hub& hub, const httplib::Request& req, httplib::Response& res,
                 const std::string& key, const FileInfo& f, const std::string& etag) {
  auto [rule, generation] = hub.take_file_rule(key, req.method == "HEAD");
  if (rule && rule->status != 0) {
    hub.log_request(req, rule->status, key);
    reply_json(res, rule->status, {{"error", "fake-hub: status knob for " + key}});
    return;
  }
  res.set_header("Accept-Ranges", "bytes");
  res.set_header("ETag", "\"" + etag + "\"");
  ByteRange range{0, f.size == 0 ? 0 : f.size - 1};
  int status = 200;
  switch (parse_range(req.get_header_value("Range"), f.size, range)) {
    case RangeKind::kUnsatisfiable:
      hub.log_request(req, 416, key);
      res.status = 416;
      res.set_header("Content-Range", "bytes */" + std::to_string(f.size));
      return;
    case RangeKind::kRange:
      status = 206;
      res.set_header("Content-Range", "bytes " + std::to_string(range.first) + "-" +
                                          std::to_string(range.last) + "/" +
                                          std::to_string(f.size));
      break;
    case RangeKind::kNone:
      break;
  }
  const std::uint64_t length = f.size == 0 ? 0 : range.last - range.first + 1;
  int fd = length == 0 ? -1 : ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (length != 0 && fd < 0) {
    hub.log_request(req, 500, key);
    reply_json(res, 500, {{"error", "fake-hub: cannot open " + key}});
    return;
  }
  const std::uint64_t id = hub.log_request(req, status, key);
  res.status = status;
  if (length == 0) {
    res.set_content(std::string(), "application/octet-stream");
    return;
  }
  auto transfer = std::make_shared<Transfer>(hub, fd, rule.value_or(Rule{}), generation,
                                             range.first, length, id, key);
  res.set_content_provider(static_cast<std::size_t>(length), "application/octet-stream",
                           [transfer](std::size_t offset, std::size_t, httplib::DataSink& sink) {
                             return transfer->provide(offset, sink);
                           });
}

std::string repo_of(const httplib::Request& req) {
  return req.matches[1].str() + "/" + req.matches[2].str();
}

bool valid_repo(const httplib::Request& req) {
  return is_repo_part(req.matches[1].str()) && is_repo_part(req.matches[2].str());
}

json sibling(const std::string& rel, std::uint64_t size, const Hashes& h, bool lfs, bool blobs) {
  json s = {{"rfilename", rel}};
  if (blobs) {
    s["blobId"] = h.blob_id;
    s["size"] = size;
    if (lfs) {
      s["lfs"] = {{"sha256", h.sha256}, {"size", size}, {"pointerSize", 134}};
    }
  }
  return s;
}

void add_routes(httplib::Server& server, Hub& hub, const std::string& base) {
  // httplib would apply a Range header itself to every answer with a body,
  // cutting up JSON errors too; the hub reads the header itself instead.
  server.set_pre_routing_handler([](const httplib::Request& req, httplib::Response&) {
    const_cast<httplib::Request&>(req).ranges.clear();  // NOLINT: req is not const in httplib
    return httplib::Server::HandlerResponse::Unhandled;
  });

  // -- control --

  server.Post("/_fake/knobs", [&hub](const httplib::Request& req, httplib::Response& res) {
    try {
      json body = json::parse(req.body);
      const json& rules = body.is_object() ? body.at("rules") : body;
      if (!rules.is_array()) {
        throw std::invalid_argument("\"rules\" must be an array");
      }
      std::vector<Rule> parsed;
      for (const json& r : rules) {
        parsed.push_back(parse_rule(r));
      }
      hub.set_rules(std::move(parsed));
      reply_json(res, 200, {{"ok", true}});
    } catch (const std::exception& e) {
      reply_json(res, 400, {{"error", std::string("fake-hub: bad knobs: ") + e.what()}});
    }
  });
  server.Get("/_fake/log", [&hub](const httplib::Request&, httplib::Response& res) {
    reply_json(res, 200, hub.log());
  });
  server.Post("/_fake/log/clear", [&hub](const httplib::Request&, httplib::Response& res) {
    hub.clear_log();
    reply_json(res, 200, {{"ok", true}});
  });
  server.Get("/_fake/wait", [&hub](const httplib::Request& req, httplib::Response& res) {
    const std::string event = req.get_param_value("event");
    std::uint64_t timeout_ms = 30000;
    std::uint64_t count = 1;
    if ((event != "stalled" && event != "request") ||
        (req.has_param("timeout_ms") &&
         !parse_u64(req.get_param_value("timeout_ms"), timeout_ms)) ||
        (req.has_param("count") && !parse_u64(req.get_param_value("count"), count))) {
      reply_json(res, 400,
                 {{"error",
                   "fake-hub: wait needs event=stalled|request, and numbers "
                   "for timeout_ms and count"}});
      return;
    }
    const std::string path = req.has_param("path") ? req.get_param_value("path") : "*";
    const bool ok = hub.wait(event, path, static_cast<std::int64_t>(count),
                             std::chrono::milliseconds(timeout_ms));
    reply_json(res, ok ? 200 : 408, {{"ok", ok}});
  });

  // -- the hub --

  auto listing = [&hub](const httplib::Request& req, httplib::Response& res) {
    const std::string repo = repo_of(req);
    const std::string rev = req.matches.size() > 3 ? req.matches[3].str() : "main";
    ListingKnobs knobs = hub.listing_knobs(repo);
    if (knobs.api_status != 0) {
      hub.log_request(req, knobs.api_status, repo);
      reply_json(res, knobs.api_status, {{"error", "fake-hub: api_status knob for " + repo}});
      if (knobs.api_status == 404) {
        res.set_header("X-Error-Code", "RepoNotFound");
      }
      return;
    }
    if (!valid_repo(req) || !hub.repo_exists(repo)) {
      hub.log_request(req, 404, repo);
      not_found(res, "RepoNotFound", "Repository not found");
      return;
    }
    if (int denied = auth_status(hub, repo, req)) {
      hub.log_request(req, denied, repo);
      deny(res, denied, repo);
      return;
    }
    const std::vector<FileInfo> files = hub.files(repo);
    const std::string commit = Hub::commit_of(files);
    if (rev != "main" && rev != commit) {
      hub.log_request(req, 404, repo);
      not_found(res, "RevisionNotFound", "Invalid rev id: " + rev);
      return;
    }
    hub.log_request(req, 200, repo);
    const bool blobs = req.get_param_value("blobs") == "true";
    json siblings = json::array();
    for (const FileInfo& f : files) {
      std::uint64_t size = knobs.declared_size.value_or(f.size);
      if (auto it = knobs.file_declared_size.find(f.rel); it != knobs.file_declared_size.end()) {
        size = it->second;
      }
      siblings.push_back(sibling(f.rel, size, f.hashes, f.lfs, blobs));
    }
    for (const std::string& extra : knobs.extra_siblings) {
      Hashes h{digest_hex(EVP_sha256(), extra), digest_hex(EVP_sha1(), extra)};
      siblings.push_back(sibling(extra, 1, h, is_lfs(extra, 1), blobs));
    }
    const bool gated = !hub.token_of(repo).empty();
    reply_json(res, 200,
               {{"_id", commit.substr(0, 24)},
                {"id", repo},
                {"modelId", repo},
                {"sha", commit},
                {"private", false},
                {"gated", gated ? json("auto") : json(false)},
                {"siblings", siblings}});
  };
  // The hub's model search (GET /api/models?search=&filter=&limit=&sort=),
  // as huggingface_hub's list_models reads it: an array of {id, modelId,
  // downloads, likes, tags, pipeline_tag}; "filter=gguf" keeps repositories
  // holding a .gguf file.
  server.Get("/api/models", [&hub](const httplib::Request& req, httplib::Response& res) {
    hub.log_request(req, 200, "");
    const std::string search = req.get_param_value("search");
    const bool gguf_only = req.get_param_value("filter") == "gguf";
    const int limit = req.has_param("limit") ? std::stoi(req.get_param_value("limit")) : 1000;
    auto lower = [](std::string s) {
      std::transform(s.begin(), s.end(), s.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      return s;
    };
    json out = json::array();
    for (const std::string& repo : hub.repos()) {
      if (static_cast<int>(out.size()) >= limit) {
        break;
      }
      if (lower(repo).find(lower(search)) == std::string::npos) {
        continue;
      }
      const auto files = hub.files(repo);
      const bool has_gguf = std::any_of(files.begin(), files.end(), [](const FileInfo& f) {
        return f.rel.size() > 5 && f.rel.substr(f.rel.size() - 5) == ".gguf";
      });
      if (gguf_only && !has_gguf) {
        continue;
      }
      out.push_back({{"id", repo},
                     {"modelId", repo},
                     {"downloads", 0},
                     {"likes", 0},
                     {"tags", has_gguf ? json::array({"gguf"}) : json::array()},
                     {"pipeline_tag", "text-generation"}});
    }
    reply_json(res, 200, out);
  });
  server.Get(R"(/api/models/([^/]+)/([^/]+)/revision/([^/]+))", listing);
  server.Get(R"(/api/models/([^/]+)/([^/]+))", listing);

  server.Get(R"(/([^/]+)/([^/]+)/resolve/([^/]+)/(.+))", [&hub, &base](const httplib::Request& req,
                                                                       httplib::Response& res) {
    const std::string repo = repo_of(req);
    const std::string rev = req.matches[3].str();
    const std::string rel = req.matches[4].str();
    const std::string key = repo + "/" + rel;
    if (!valid_repo(req) || !hub.repo_exists(repo)) {
      hub.log_request(req, 404, key);
      not_found(res, "RepoNotFound", "Repository not found");
      return;
    }
    if (int denied = auth_status(hub, repo, req)) {
      hub.log_request(req, denied, key);
      deny(res, denied, repo);
      return;
    }
    const std::vector<FileInfo> files = hub.files(repo);
    const std::string commit = Hub::commit_of(files);
    if (rev != "main" && rev != commit) {
      hub.log_request(req, 404, key);
      not_found(res, "RevisionNotFound", "Invalid rev id: " + rev);
      return;
    }
    auto f =
        std::find_if(files.begin(), files.end(), [&](const FileInfo& x) { return x.rel == rel; });
    if (f == files.end()) {
      hub.log_request(req, 404, key);
      not_found(res, "EntryNotFound", "Entry not found");
      return;
    }
    res.set_header("X-Repo-Commit", commit);
    if (!f->lfs) {
      serve_bytes(hub, req, res, key, *f, f->hashes.blob_id);
      return;
    }
    hub.log_request(req, 302, key);
    res.status = 302;
    res.set_header("Location", base + "/_cdn/" + repo + "/" + commit + "/" + escape_path(rel));
    res.set_header("X-Linked-Etag", "\"" + f->hashes.sha256 + "\"");
    res.set_header("X-Linked-Size", std::to_string(f->size));
  });

  server.Get(R"(/_cdn/([^/]+)/([^/]+)/([0-9a-f]{40})/(.+))",
             [&hub](const httplib::Request& req, httplib::Response& res) {
               const std::string repo = repo_of(req);
               const std::string rel = req.matches[4].str();
               const std::string key = repo + "/" + rel;
               if (!valid_repo(req) || !hub.repo_exists(repo)) {
                 hub.log_request(req, 404, key);
                 not_found(res, "RepoNotFound", "Repository not found");
                 return;
               }
               if (int denied = auth_status(hub, repo, req)) {
                 hub.log_request(req, denied, key);
                 deny(res, denied, repo);
                 return;
               }
               auto f = hub.file(repo, rel);
               if (!f) {
                 hub.log_request(req, 404, key);
                 not_found(res, "EntryNotFound", "Entry not found");
                 return;
               }
               serve_bytes(hub, req, res, key, *f, f->hashes.sha256);
             });

  // GitHub release downloads (the router's LEMONADE_RELEASES_URL points here in tests).
  server.Get(R"(/([^/]+)/([^/]+)/releases/download/([^/]+)/([^/]+))",
             [&hub](const httplib::Request& req, httplib::Response& res) {
               const std::string key =
                   repo_of(req) + "/" + req.matches[3].str() + "/" + req.matches[4].str();
               auto f = hub.release_asset(key);
               if (!f) {
                 hub.log_request(req, 404, key);
                 reply_json(res, 404, {{"error", "Not Found"}});
                 return;
               }
               serve_bytes(hub, req, res, key, *f, f->hashes.sha256);
             });

  // Anything else is logged too, so a test sees a wrong URL.
  server.Get(R"(/.*)", [&hub](const httplib::Request& req, httplib::Response& res) {
    hub.log_request(req, 404, "");
    reply_json(res, 404, {{"error", "Not Found"}});
  });
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

}  // namespace

int run_hub(const HubOptions& options) {
  if (!is_loopback(options.host)) {
    std::fprintf(stderr, "fake-hub: --host must be a loopback address, not %s\n",
                 options.host.c_str());
    return 2;
  }
  // SIGTERM and SIGINT go to a sigwait thread; every thread started later
  // inherits the blocked mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  // Both live until the process exits (it never returns once serving).
  auto* hub = new Hub(options.root);
  auto* server = new httplib::Server();
  auto* base = new std::string();
  server->new_task_queue = [] { return new GrowingTaskQueue(320); };
  server->set_tcp_nodelay(true);
  server->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  server->set_keep_alive_max_count(100000);
  server->set_write_timeout(30, 0);  // a reader may pause while it hashes
  add_routes(*server, *hub, *base);

  const int port = options.port == 0
                       ? server->bind_to_any_port(options.host)
                       : (server->bind_to_port(options.host, options.port) ? options.port : -1);
  if (port <= 0) {
    std::fprintf(stderr, "fake-hub: cannot bind %s:%d\n", options.host.c_str(), options.port);
    return 1;
  }
  const std::string host = options.host == "::1" ? "[::1]" : options.host;
  *base = "http://" + host + ":" + std::to_string(port);

  std::thread([signals, hub, server] {
    int sig = 0;
    sigwait(&signals, &sig);
    std::fprintf(stderr, "fake-hub: signal %d, stopping\n", sig);
    hub->stop();  // releases stalled transfers and waits
    server->stop();
    // Idle keep-alive connections may hold httplib's threads for a while.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::fflush(stdout);
    std::_Exit(0);
  }).detach();

  std::printf("fake-hub listening on %s:%d\n", host.c_str(), port);
  std::fflush(stdout);
  server->listen_after_bind();
  hub->stop();
  std::fflush(stdout);
  std::_Exit(0);
}

}  // namespace fake
