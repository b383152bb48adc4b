#include "curl_attempt.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

#include "lemon/core/log.h"

namespace lemon::download {

using Clock = std::chrono::steady_clock;

namespace {

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
  curl_library().easy_getinfo(a.curl, CURLINFO_RESPONSE_CODE, &a.status);
  if (a.fd < 0 || !ok_status_code(a.status)) {
    return true;
  }
  if (a.status == 200 && a.offset > 0) {
    // The server ignored the Range request: start the file over.
    if (::ftruncate(a.fd, 0) != 0 || ::lseek(a.fd, 0, SEEK_SET) < 0) {
      a.write_errno = errno;
      return false;
    }
    a.pipe->drain();
    *a.hasher = Hasher(a.kind, a.hash_size);
    a.offset = 0;
    a.restarted = true;
  } else if (a.status == 206 && a.range_start.value_or(a.offset) != a.offset) {
    a.bad_range = true;  // bytes for another place of the file
    return false;
  }
  if (a.total == 0) {
    curl_off_t length = -1;
    curl_library().easy_getinfo(a.curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
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
  a.pipe->push(data, bytes);
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

}  // namespace

std::string without_query(const std::string& url) {
  return url.substr(0, url.find('?'));
}

void configure(CurlHandle& c, const std::string& url, const std::string& token,
               const TransferOptions& options, Attempt& a) {
  CURL* h = c.h;
  curl_library().easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_library().easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_library().easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
  curl_library().easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
  curl_library().easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_library().easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_library().easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  curl_library().easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                             static_cast<long>(options.connect_timeout.count()));
  curl_library().easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  long stall_s =
      static_cast<long>(std::max<long long>(1, (options.stall_timeout.count() + 999) / 1000));
  curl_library().easy_setopt(h, CURLOPT_LOW_SPEED_TIME, stall_s);
  curl_library().easy_setopt(h, CURLOPT_BUFFERSIZE, 512L * 1024L);
  curl_library().easy_setopt(h, CURLOPT_USERAGENT, options.user_agent.c_str());
  curl_library().easy_setopt(h, CURLOPT_FAILONERROR, 0L);  // statuses are mapped here
  if (a.text != nullptr) {
    // Listings may come compressed; files never (Range covers the raw bytes).
    curl_library().easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
  }
  if (!token.empty()) {
    // Sent to the hub only: curl drops it when a redirect leaves the host.
    curl_library().easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
    curl_library().easy_setopt(h, CURLOPT_XOAUTH2_BEARER, token.c_str());
    curl_library().easy_setopt(h, CURLOPT_UNRESTRICTED_AUTH, 0L);
  }
  curl_library().easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_library().easy_setopt(h, CURLOPT_HEADERDATA, &a);
  curl_library().easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
  curl_library().easy_setopt(h, CURLOPT_WRITEDATA, &a);
  curl_library().easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_library().easy_setopt(h, CURLOPT_XFERINFODATA, &a);
  curl_library().easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  a.curl = h;
}

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
    return Error(
        ErrorCode::kNetworkError,
        host + " answered a resume request with the wrong range for " + without_query(url));
  }
  if (a.too_big) {
    return Error(ErrorCode::kNetworkError, host + " sent an answer that is too large");
  }
  long status = a.status;
  if (status == 0 && a.curl != nullptr) {
    curl_library().easy_getinfo(a.curl, CURLINFO_RESPONSE_CODE, &status);
  }
  if (rc != CURLE_OK && status == 0) {
    retryable = true;
    return Error(ErrorCode::kNetworkError,
                 "cannot download from " + host + ": " + curl_library().easy_strerror(rc));
  }
  switch (status) {
    case 200:
    case 206:
      if (rc != CURLE_OK) {
        retryable = true;
        return Error(ErrorCode::kNetworkError, "the download from " + host + " broke off: " +
                                                   curl_library().easy_strerror(rc));
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

}  // namespace lemon::download
