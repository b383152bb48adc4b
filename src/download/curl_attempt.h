// One curl transfer (an "attempt" of fetch_file or fetch_text): the easy
// handle's options, the header/write/progress callbacks that write, hash
// and watch for cancellation, and the mapping of its outcome to a typed
// Status. transfer.cpp decides about retries; this file does one exchange.
//
// Internal to src/download. Thread-safety: an Attempt belongs to the thread
// running its transfer.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "curl_library.h"
#include "hash_pipe.h"
#include "lemon/download/transfer.h"

namespace lemon::download {

// What the callbacks of one curl transfer share.
struct Attempt {
  CURL* curl = nullptr;
  // File transfers.
  int fd = -1;
  Hasher* hasher = nullptr;
  HashPipe* pipe = nullptr;  // feeds `hasher` on its own thread
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
  bool bad_range = false;                    // a 206 that does not start where the file ends
  bool body_started = false;
  bool restarted = false;  // a 200 answered a Range request: the file was truncated
  int write_errno = 0;
  const CancelledFn* cancelled = nullptr;
  bool was_cancelled = false;
  const ProgressFn* progress = nullptr;
  std::uint64_t total = 0;
  std::chrono::steady_clock::time_point last_progress{};
};

struct CurlHandle {
  // Null when libcurl did not load (need_curl() says why).
  CURL* h = curl_library().loaded ? curl_library().easy_init() : nullptr;
  curl_slist* headers = nullptr;
  ~CurlHandle() {
    if (h != nullptr) {
      curl_library().slist_free_all(headers);
      curl_library().easy_cleanup(h);
    }
  }
};

// Sets every option of `c` for `url`; the callbacks share `a`.
void configure(CurlHandle& c, const std::string& url, const std::string& token,
               const TransferOptions& options, Attempt& a);

// The outcome of one attempt, as a Status; `retryable` says whether another
// attempt may help.
Status classify(CURLcode rc, const Attempt& a, const std::string& url, bool& retryable);

// `url` without its query string (for messages).
std::string without_query(const std::string& url);

}  // namespace lemon::download
