#include "lemon/download/transfer.h"
#include "lemon/core/mutex.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include "curl_attempt.h"
#include "hash_pipe.h"
#include "lemon/core/log.h"
#include "lemon/core/unique_fd.h"

namespace lemon::download {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// libcurl, loaded on the first download (curl_library.h); an error when it
// cannot be.
Status need_curl() {
  const CurlLibrary& lib = curl_library();
  if (!lib.loaded) {
    return Error(ErrorCode::kInternal, "downloads need libcurl, which did not load: " + lib.error);
  }
  return ok_status();
}

// ---- the process-wide limit on concurrent transfers ------------------------------------

struct TransferSlots {
  Mutex mu;
  CondVar cv;
  int max LEMON_GUARDED_BY(mu) = 4;
  int used LEMON_GUARDED_BY(mu) = 0;
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
        MutexLock lock(s.mu);
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
  MutexLock lock(s.mu);
  while (s.used >= s.max) {
    if (cancelled && cancelled()) {
      return Error(ErrorCode::kCancelled, "cancelled while waiting for a download slot");
    }
    s.cv.wait_for(lock, std::chrono::milliseconds(100));
  }
  ++s.used;
  return SlotGuard(true);
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
    MutexLock lock(s.mu);
    s.max = std::max(1, n);
  }
  s.cv.notify_all();
}

std::string url_host(const std::string& url) {
  if (!curl_library().loaded) {
    return url;
  }
  CURLU* u = curl_library().url();
  std::string out;
  if (curl_library().url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    char* host = nullptr;
    char* port = nullptr;
    if (curl_library().url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
      out = host;
      if (curl_library().url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK) {
        out += ":" + std::string(port);
      }
    }
    curl_library().free(host);
    curl_library().free(port);
  }
  curl_library().url_cleanup(u);
  return out;
}

namespace {

// fetch_file() less the cleanup of an empty partial file.
Status fetch_into(const FileRequest& request, const TransferOptions& options,
                  const ProgressFn& on_progress_fn, const CancelledFn& cancelled) {
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
    UniqueFd fd(
        ::open(request.partial_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
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
    HashPipe pipe(hasher);  // hashes on its own thread while bytes arrive
    a.pipe = &pipe;
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
      curl_library().easy_setopt(curl.h, CURLOPT_RANGE, range.c_str());
    }
    CURLcode rc = curl_library().easy_perform(curl.h);
    pipe.stop();  // every received byte is hashed
    if (a.status == 0) {
      curl_library().easy_getinfo(curl.h, CURLINFO_RESPONSE_CODE, &a.status);
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

}  // namespace

Status fetch_file(const FileRequest& request, const TransferOptions& options,
                  const ProgressFn& on_progress, const CancelledFn& cancelled) {
  if (Status curl = need_curl(); !curl.ok()) {
    return curl;
  }
  Status result = fetch_into(request, options, on_progress, cancelled);
  if (!result.ok() && result.error().code() != ErrorCode::kCancelled &&
      file_size_or_zero(request.partial_path) == 0) {
    // A failed transfer leaves no empty file behind (a cancelled one keeps
    // its partial file, whatever its size, as documented).
    std::error_code ec;
    fs::remove(request.partial_path, ec);
  }
  return result;
}

Result<std::string> fetch_text(const std::string& url, const std::string& bearer_token,
                               const TransferOptions& options, const CancelledFn& cancelled,
                               std::size_t max_bytes) {
  if (Status curl = need_curl(); !curl.ok()) {
    return std::move(curl).error();
  }
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
    CURLcode rc = curl_library().easy_perform(curl.h);
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
