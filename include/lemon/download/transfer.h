// File and text transfers over HTTP(S) through libcurl. This
// layer knows nothing about models or the hub: it fetches a URL into a file,
// resumably, verifying a checksum while the bytes stream, and reports
// progress. The model store and the backend installer both build on it.
//
// - TLS verification is always on; HTTP/2 is used where the server offers it;
//   redirects are followed (at most 5, http/https only).
// - A file accumulates in `partial_path`. When that file already holds a
//   prefix, the transfer resumes with a Range request (the prefix is hashed
//   first, so the checksum still covers the whole file). A server that ignores
//   Range (200) restarts the file; 416 restarts it from zero.
// - The file is renamed onto `final_path` only after its size and checksum
//   match; nothing unverified is ever at final_path. A checksum mismatch
//   deletes the partial file and fails with kChecksumMismatch.
// - An attempt that fails after receiving bytes is retried with resume (up to
//   `max_attempts`); errors that a retry cannot fix (404, 401, 403, disk
//   full, cancel) are returned at once.
// - At most `TransferOptions::max_concurrent` files transfer at once across
//   the whole process; a caller over that limit waits (cancellably).
// - The bearer token is sent as `Authorization: Bearer` and never appears in
//   logs or error messages.
//
// Errors: kRemoteNotFound (404/410), kRemoteUnauthorized (401),
// kRemoteForbidden (403), kNetworkError (DNS, connect, TLS, reset, stall,
// other HTTP statuses; the message names the host), kChecksumMismatch,
// kInsufficientStorage (ENOSPC while writing), kCancelled, kInternal (local
// file errors other than ENOSPC).
//
// Thread-safety: every function may be called from any thread concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "lemon/core/error.h"
#include "lemon/download/checksum.h"

namespace lemon::download {

struct TransferOptions {
  std::chrono::milliseconds connect_timeout{15'000};
  // Fail an attempt when fewer than 1 byte/s arrives for this long.
  std::chrono::milliseconds stall_timeout{30'000};
  int max_attempts = 4;
  std::string user_agent = "lemonade-router";
  // Read from the environment: LEMONADE_DOWNLOAD_STALL_TIMEOUT (seconds),
  // LEMONADE_DOWNLOAD_CONNECT_TIMEOUT (seconds).
  static TransferOptions from_environment();
};

// Process-wide limit on concurrent file transfers (default 4). Changing it
// affects transfers that start afterwards. For tests and the benchmark.
void set_max_concurrent_transfers(int n);

struct FileRequest {
  std::string url;
  std::filesystem::path partial_path;  // bytes accumulate here (resume point)
  std::filesystem::path final_path;    // renamed here once verified
  std::optional<std::uint64_t> expected_size;
  Checksum checksum;         // kNone: size check only
  std::string bearer_token;  // empty: no Authorization header
};

struct FileProgress {
  std::uint64_t bytes_done = 0;   // including a resumed prefix
  std::uint64_t bytes_total = 0;  // expected_size, else Content-Length, else 0
};

// Called from the transferring thread, at most every ~50 ms and once at the
// end. Must not block.
using ProgressFn = std::function<void(const FileProgress&)>;
// Polled from the transferring thread; true aborts with kCancelled (the
// partial file stays for a later resume).
using CancelledFn = std::function<bool()>;

Status fetch_file(const FileRequest& request, const TransferOptions& options,
                  const ProgressFn& on_progress, const CancelledFn& cancelled);

// A small GET into memory (API listings). Bodies over `max_bytes` fail with
// kNetworkError. Same status-to-error mapping as fetch_file.
Result<std::string> fetch_text(const std::string& url, const std::string& bearer_token,
                               const TransferOptions& options, const CancelledFn& cancelled,
                               std::size_t max_bytes = 16u << 20);

// "host[:port]" of a URL, for messages; "" when it does not parse.
std::string url_host(const std::string& url);

}  // namespace lemon::download
