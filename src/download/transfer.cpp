#include "lemon/download/transfer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include <curl/curl.h>

#include "lemon/core/log.h"

namespace lemon::download {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// ---- the process-wide limit on concurrent transfers ------------------------------------

struct TransferSlots {
  std::mutex mu;
  std::condition_variable cv;
  int max = 4;
  int used = 0;
};

TransferSlots& slots() {
  static TransferSlots s;
  return s;
}

class SlotGuard {
 public:
  SlotGuard() = default;
  explicit SlotGuard(bool held) : held_(held) {}
  SlotGuard(SlotGuard&& o) noexcept : held_(std::exchange(o.held_, false)) {}
  SlotGuard& operator=(SlotGuard&&) = delete;
  ~SlotGuard() {
    if (held_) {
      TransferSlots& s = slots();
      {
        std::lock_guard lock(s.mu);
        --s.used;
      }
      s.cv.notify_one();
    }
  }

 private:
  bool held_ = false;
};

Result<SlotGuard> take_slot(const CancelledFn& cancelled) {
  TransferSlots& s = slots();
  std::unique_lock lock(s.mu);
  while (s.used >= s.max) {
    if (cancelled && cancelled()) {
      return Error(ErrorCode::kCancelled, "cancelled while waiting for a download slot");
    }
    s.cv.wait_for(lock, std::chrono::milliseconds(100));
  }
  ++s.used;
  return SlotGuard(true);
}

// ---- one attempt -------------------------------------------------------------------------

// What the callbacks of one curl transfer share.
struct Attempt {
  CURL* curl = nullptr;
  // File transfers.
  int fd = -1;
  Hasher* hasher = nullptr;
  Checksum::Kind kind = Checksum::Kind::kNone;
  std::uint64_t hash_size = 0;  // for git's header
  std::uint64_t offset = 0;     // bytes in the file before this attempt's first byte
  std::uint64_t received = 0;   // bytes written this attempt
  // Text transfers.
  std::string* text = nullptr;
  std::size_t max_text = 0;
  bool too_big = false;
  // Both.
  long status = 0;
  std::optional<std::uint64_t> range_start;  // from Content-Range of the current response
  bool bad_range = false;  // a 206 that does not start where the file ends
  bool body_started = false;
  bool restarted = false;  // a 200 answered a Range request: the file was truncated
  int write_errno = 0;
  const CancelledFn* cancelled = nullptr;
  bool was_cancelled = false;
  const ProgressFn* progress = nullptr;
  std::uint64_t total = 0;
  Clock::time_point last_progress{};
};

bool ok_status_code(long status) {
  return status == 200 || status == 206;
}

// Called for every header line of every response (redirect hops included).
std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto& a = *static_cast<Attempt*>(user);
  const std::size_t bytes = size * n;
  std::string_view line(data, bytes);
  if (line.starts_with("HTTP/")) {
    a.range_start.reset();  // a new response (after a redirect or a 100)
    return bytes;
  }
  constexpr std::string_view kName = "content-range:";
  if (line.size() > kName.size() &&
      std::equal(kName.begin(), kName.end(), line.begin(),
                 [](char x, char y) { return x == std::tolower(static_cast<unsigned char>(y)); })) {
    std::string_view v = line.substr(kName.size());
    while (!v.empty() && v.front() == ' ') {
      v.remove_prefix(1);
    }
    if (v.starts_with("bytes ")) {
      v.remove_prefix(6);
      std::uint64_t start = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), start);
      if (ec == std::errc() && end != v.data()) {
        a.range_start = start;
      }
    }
  }
  return bytes;
}

// The first body byte of the final response: check its status and range.
// False aborts the transfer.
bool begin_body(Attempt& a) {
  a.body_started = true;
  curl_easy_getinfo(a.curl, CURLINFO_RESPONSE_CODE, &a.status);
  if (a.fd < 0 || !ok_status_code(a.status)) {
    return true;
  }
  if (a.status == 200 && a.offset > 0) {
    // The server ignored the Range request: start the file over.
    if (::ftruncate(a.fd, 0) != 0 || ::lseek(a.fd, 0, SEEK_SET) < 0) {
      a.write_errno = errno;
      return false;
    }
    *a.hasher = Hasher(a.kind, a.hash_size);
    a.offset = 0;
    a.restarted = true;
  } else if (a.status == 206 && a.range_start.value_or(a.offset) != a.offset) {
    a.bad_range = true;  // bytes for another place of the file
    return false;
  }
  if (a.total == 0) {
    curl_off_t length = -1;
    curl_easy_getinfo(a.curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    if (length > 0) {
      a.total = a.offset + static_cast<std::uint64_t>(length);
    }
  }
  return true;
}

std::size_t on_write(char* data, std::size_t size, std::size_t n, void* user) {
  auto& a = *static_cast<Attempt*>(user);
  const std::size_t bytes = size * n;
  if (!a.body_started && !begin_body(a)) {
    return 0;
  }
  if (!ok_status_code(a.status)) {
    return bytes;  // an error body: read and drop it, never into the file
  }
  if (a.text != nullptr) {
    if (a.text->size() + bytes > a.max_text) {
      a.too_big = true;
      return 0;
    }
    a.text->append(data, bytes);
    return bytes;
  }
  std::size_t done = 0;
  while (done < bytes) {
    ssize_t w = ::write(a.fd, data + done, bytes - done);
    if (w < 0) {
      if (errno == EINTR) {
        continue;
      }
      a.write_errno = errno;
      return 0;
    }
    done += static_cast<std::size_t>(w);
  }
  a.hasher->update(data, bytes);
  a.received += bytes;
  return bytes;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto& a = *static_cast<Attempt*>(user);
  if (a.cancelled != nullptr && *a.cancelled && (*a.cancelled)()) {
    a.was_cancelled = true;
    return 1;  // aborts with CURLE_ABORTED_BY_CALLBACK
  }
  if (a.progress != nullptr && *a.progress && a.text == nullptr) {
    auto now = Clock::now();
    if (now - a.last_progress >= std::chrono::milliseconds(50)) {
      a.last_progress = now;
      (*a.progress)(FileProgress{a.offset + a.received, a.total});
    }
  }
  return 0;
}

std::string without_query(const std::string& url) {
  return url.substr(0, url.find('?'));
}

struct CurlHandle {
  CURL* h = curl_easy_init();
  curl_slist* headers = nullptr;
  ~CurlHandle() {
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);
  }
};

void configure(CurlHandle& c, const std::string& url, const std::string& token,
               const TransferOptions& options, Attempt& a) {
  CURL* h = c.h;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options.connect_timeout.count()));
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  long stall_s =
      static_cast<long>(std::max<long long>(1, (options.stall_timeout.count() + 999) / 1000));
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, stall_s);
  curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 512L * 1024L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, options.user_agent.c_str());
  curl_easy_setopt(h, CURLOPT_FAILONERROR, 0L);  // statuses are mapped here
  if (a.text != nullptr) {
    // Listings may come compressed; files never (Range covers the raw bytes).
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
  }
  if (!token.empty()) {
    // Sent to the hub only: curl drops it when a redirect leaves the host.
    curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
    curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, token.c_str());
    curl_easy_setopt(h, CURLOPT_UNRESTRICTED_AUTH, 0L);
  }
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &a);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &a);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  a.curl = h;
}

// The outcome of one attempt, as a Status; `retryable` says whether another
// attempt may help.
Status classify(CURLcode rc, const Attempt& a, const std::string& url, bool& retryable) {
  retryable = false;
  const std::string host = url_host(url);
  if (a.was_cancelled) {
    return Error(ErrorCode::kCancelled, "download of " + without_query(url) + " was cancelled");
  }
  if (a.write_errno != 0) {
    if (a.write_errno == ENOSPC || a.write_errno == EDQUOT) {
      return Error(ErrorCode::kInsufficientStorage,
                   "the disk is full: " + errno_message(a.write_errno));
    }
    return Error(ErrorCode::kInternal,
                 "cannot write the download: " + errno_message(a.write_errno));
  }
  if (a.bad_range) {
    retryable = true;
    return Error(ErrorCode::kNetworkError,
                 host + " answered a resume request with the wrong range for " + without_query(url));
  }
  if (a.too_big) {
    return Error(ErrorCode::kNetworkError, host + " sent an answer that is too large");
  }
  long status = a.status;
  if (status == 0 && a.curl != nullptr) {
    curl_easy_getinfo(a.curl, CURLINFO_RESPONSE_CODE, &status);
  }
  if (rc != CURLE_OK && status == 0) {
    retryable = true;
    return Error(ErrorCode::kNetworkError,
                 "cannot download from " + host + ": " + curl_easy_strerror(rc));
  }
  switch (status) {
    case 200:
    case 206:
      if (rc != CURLE_OK) {
        retryable = true;
        return Error(ErrorCode::kNetworkError,
                     "the download from " + host + " broke off: " + curl_easy_strerror(rc));
      }
      return ok_status();
    case 404:
    case 410:
      return Error(ErrorCode::kRemoteNotFound, without_query(url) + " was not found on " + host);
    case 401:
      return Error(ErrorCode::kRemoteUnauthorized,
                   host + " requires authentication for " + without_query(url));
    case 403:
      return Error(ErrorCode::kRemoteForbidden, host + " refused access to " + without_query(url));
    default:
      retryable = status >= 500 || status == 408 || status == 429;
      return Error(ErrorCode::kNetworkError, host + " answered HTTP " + std::to_string(status) +
                                                 " for " + without_query(url));
  }
}

// Sleeps up to `d`, returning early (true) when cancelled.
bool backoff(std::chrono::milliseconds d, const CancelledFn& cancelled) {
  auto until = Clock::now() + d;
  while (Clock::now() < until) {
    if (cancelled && cancelled()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cancelled && cancelled();
}

std::uint64_t file_size_or_zero(const fs::path& p) {
  std::error_code ec;
  auto s = fs::file_size(p, ec);
  return ec ? 0 : s;
}

// Creates the parent directory of `file` (when it has one).
Status make_parent(const fs::path& file) {
  const fs::path dir = file.parent_path();
  if (dir.empty()) {
    return ok_status();
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return Error(ErrorCode::kInternal, "cannot create " + dir.string() + ": " + ec.message());
  }
  return ok_status();
}

// The partial file holds every byte: check it, then move it to final_path.
Status finish_file(const FileRequest& r, Hasher& hasher, int fd) {
  if (::fsync(fd) != 0 && (errno == ENOSPC || errno == EDQUOT)) {
    return Error(ErrorCode::kInsufficientStorage, "the disk is full: " + errno_message(errno));
  }
  std::string actual;
  if (r.checksum.kind == Checksum::Kind::kGitBlobSha1 && !r.expected_size) {
    // git's header needs the size, which was not known while bytes streamed.
    auto hashed = hash_file(r.partial_path, r.checksum.kind);
    if (!hashed.ok()) {
      return std::move(hashed).error();
    }
    actual = std::move(*hashed);
  } else {
    actual = hasher.finish();
  }
  std::error_code ec;
  if (r.checksum.kind != Checksum::Kind::kNone && actual != r.checksum.hex) {
    fs::remove(r.partial_path, ec);
    return Error(ErrorCode::kChecksumMismatch,
                 r.final_path.filename().string() + " does not match its published " +
                     checksum_kind_name(r.checksum.kind) + ": expected " + r.checksum.hex +
                     ", got " + actual);
  }
  if (Status made = make_parent(r.final_path); !made.ok()) {
    return made;
  }
  fs::rename(r.partial_path, r.final_path, ec);
  if (ec) {
    return Error(ErrorCode::kInternal,
                 "cannot move the download to " + r.final_path.string() + ": " + ec.message());
  }
  return ok_status();
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

TransferOptions TransferOptions::from_environment() {
  TransferOptions o;
  auto seconds = [](const char* name, std::chrono::milliseconds& out) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') {
      return;
    }
    char* end = nullptr;
    double s = std::strtod(v, &end);
    if (end != v && *end == '\0' && std::isfinite(s) && s > 0 && s < 1e6) {
      out = std::chrono::milliseconds(static_cast<long long>(std::llround(s * 1000.0)));
    }
  };
  seconds("LEMONADE_DOWNLOAD_STALL_TIMEOUT", o.stall_timeout);
  seconds("LEMONADE_DOWNLOAD_CONNECT_TIMEOUT", o.connect_timeout);
  return o;
}

void set_max_concurrent_transfers(int n) {
  TransferSlots& s = slots();
  {
    std::lock_guard lock(s.mu);
    s.max = std::max(1, n);
  }
  s.cv.notify_all();
}

std::string url_host(const std::string& url) {
  CURLU* u = curl_url();
  std::string out;
  if (curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    char* host = nullptr;
    char* port = nullptr;
    if (curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
      out = host;
      if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK) {
        out += ":" + std::string(port);
      }
    }
    curl_free(host);
    curl_free(port);
  }
  curl_url_cleanup(u);
  return out;
}

Status fetch_file(const FileRequest& request, const TransferOptions& options,
                  const ProgressFn& on_progress_fn, const CancelledFn& cancelled) {
  global_init();
  std::error_code ec;
  if (Status made = make_parent(request.partial_path); !made.ok()) {
    return made;
  }
  const std::uint64_t hash_size = request.expected_size.value_or(0);
  auto slot = take_slot(cancelled);
  if (!slot.ok()) {
    return std::move(slot).error();
  }
  int attempts_left = std::max(1, options.max_attempts);
  int idle_failures = 0;
  Status last = Error(ErrorCode::kNetworkError, "no attempt was made");
  while (attempts_left-- > 0) {
    std::uint64_t have = file_size_or_zero(request.partial_path);
    if (request.expected_size && have > *request.expected_size) {
      fs::remove(request.partial_path, ec);  // longer than the file: start over
      have = 0;
    }
    Fd fd(::open(request.partial_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (fd.get() < 0) {
      int err = errno;
      if (err == ENOSPC || err == EDQUOT) {
        return Error(ErrorCode::kInsufficientStorage, "the disk is full: " + errno_message(err));
      }
      return Error(ErrorCode::kInternal,
                   "cannot open " + request.partial_path.string() + ": " + errno_message(err));
    }
    Hasher hasher(request.checksum.kind, hash_size);
    if (have > 0) {
      // The checksum covers the whole file: feed it the prefix we keep.
      if (Status prefix = hash_prefix(request.partial_path, have, hasher); !prefix.ok()) {
        return prefix;
      }
    }
    if (request.expected_size && have == *request.expected_size) {
      Status done = finish_file(request, hasher, fd.get());
      if (done.ok() || done.error().code() != ErrorCode::kChecksumMismatch) {
        if (done.ok() && on_progress_fn) {
          on_progress_fn(FileProgress{have, have});
        }
        return done;
      }
      // A complete but wrong file: it was removed, fetch it again.
      last = std::move(done);
      continue;
    }

    CurlHandle curl;
    if (curl.h == nullptr) {
      return Error(ErrorCode::kInternal, "curl_easy_init failed");
    }
    Attempt a;
    a.fd = fd.get();
    a.hasher = &hasher;
    a.kind = request.checksum.kind;
    a.hash_size = hash_size;
    a.offset = have;
    a.cancelled = &cancelled;
    a.progress = &on_progress_fn;
    a.total = request.expected_size.value_or(0);
    configure(curl, request.url, request.bearer_token, options, a);
    // CURLOPT_RANGE rather than CURLOPT_RESUME_FROM_LARGE: with the latter
    // curl fails on a 200 answer, and here a 200 restarts the file instead.
    const std::string range = std::to_string(have) + "-";
    if (have > 0) {
      curl_easy_setopt(curl.h, CURLOPT_RANGE, range.c_str());
    }
    CURLcode rc = curl_easy_perform(curl.h);
    if (a.status == 0) {
      curl_easy_getinfo(curl.h, CURLINFO_RESPONSE_CODE, &a.status);
    }
    if (a.status == 416) {
      // The range no longer fits the file on the server: start over.
      fs::remove(request.partial_path, ec);
      last = Error(ErrorCode::kNetworkError, url_host(request.url) + " refused to resume " +
                                                 request.final_path.filename().string());
      continue;
    }
    bool retryable = false;
    Status result = classify(rc, a, request.url, retryable);
    if (a.bad_range) {
      fs::remove(request.partial_path, ec);  // start over rather than trust that server
    }
    if (result.ok()) {
      const std::uint64_t size = a.offset + a.received;
      if (request.expected_size && size != *request.expected_size) {
        retryable = true;
        result = Error(ErrorCode::kNetworkError,
                       url_host(request.url) + " sent " + std::to_string(size) + " of " +
                           std::to_string(*request.expected_size) + " bytes of " +
                           request.final_path.filename().string());
      } else {
        result = finish_file(request, hasher, fd.get());
        if (result.ok() && on_progress_fn) {
          on_progress_fn(FileProgress{size, size});
        }
        return result;
      }
    }
    if (!retryable) {
      return result;
    }
    last = std::move(result);
    logger("download")
        ->warn("{}; {}", last.error().message(), attempts_left > 0 ? "retrying" : "giving up");
    if (a.received == 0) {
      // Nothing arrived: wait a little before the next try.
      auto delay = std::chrono::milliseconds(std::min(2000, 200 << std::min(idle_failures, 4)));
      ++idle_failures;
      if (attempts_left > 0 && backoff(delay, cancelled)) {
        return Error(ErrorCode::kCancelled, "download cancelled");
      }
    }
  }
  return last;
}

Result<std::string> fetch_text(const std::string& url, const std::string& bearer_token,
                               const TransferOptions& options, const CancelledFn& cancelled,
                               std::size_t max_bytes) {
  global_init();
  int attempts_left = std::max(1, options.max_attempts);
  int failures = 0;
  Status last = Error(ErrorCode::kNetworkError, "no attempt was made");
  while (attempts_left-- > 0) {
    CurlHandle curl;
    if (curl.h == nullptr) {
      return Error(ErrorCode::kInternal, "curl_easy_init failed");
    }
    std::string body;
    Attempt a;
    a.text = &body;
    a.max_text = max_bytes;
    a.cancelled = &cancelled;
    configure(curl, url, bearer_token, options, a);
    CURLcode rc = curl_easy_perform(curl.h);
    bool retryable = false;
    Status result = classify(rc, a, url, retryable);
    if (result.ok()) {
      return body;
    }
    if (!retryable) {
      return std::move(result).error();
    }
    last = std::move(result);
    auto delay = std::chrono::milliseconds(std::min(2000, 200 << std::min(failures++, 4)));
    if (attempts_left > 0 && backoff(delay, cancelled)) {
      return Error(ErrorCode::kCancelled, "cancelled");
    }
  }
  return std::move(last).error();
}

}  // namespace lemon::download
