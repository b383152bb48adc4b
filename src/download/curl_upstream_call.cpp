#include "curl_upstream_call.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <utility>

namespace lemon::download::curl_upstream_impl {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

bool has_chunked(std::string_view value) {
  auto lower = [](char ch) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  };
  constexpr std::string_view kChunked = "chunked";
  return std::search(value.begin(), value.end(), kChunked.begin(), kChunked.end(),
                     [&](char a, char b) { return lower(a) == b; }) != value.end();
}

bool skipped_header(std::string_view name, const net::UpstreamRequest& request, bool authorized) {
  return net::iequals(name, "Host") || net::iequals(name, "Content-Length") ||
         net::iequals(name, "Transfer-Encoding") || net::iequals(name, "Connection") ||
         net::iequals(name, "Expect") ||
         (!request.content_type.empty() && net::iequals(name, "Content-Type")) ||
         (authorized && net::iequals(name, "Authorization"));
}

}  // namespace

void Call::heard() {
  if (options->idle_timeout.count() > 0) {
    idle_deadline = Clock::now() + options->idle_timeout;
  }
}

bool Call::deliver_head() {
  head_done = true;
  if (auto te = head.headers.get("Transfer-Encoding"); te && has_chunked(*te)) {
    length_framed = false;
  } else {
    length_framed = head.headers.has("Content-Length");
  }
  try {
    cancelled = !(*on_head)(head);
  } catch (...) {
    thrown = std::current_exception();
  }
  return !cancelled && !thrown;
}

namespace {

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto& c = *static_cast<Call*>(user);
  const std::size_t bytes = size * n;
  c.got_bytes = true;
  c.heard();
  if (c.head_done) {
    return bytes;  // trailers
  }
  std::string_view line(data, bytes);
  if (line.starts_with("HTTP/")) {
    c.head = {};  // a new response (after an interim one)
    return bytes;
  }
  if (trim(line).empty()) {
    long status = 0;
    curl_library().easy_getinfo(c.easy, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200) {
      c.head = {};  // the end of an interim 1xx response
      return bytes;
    }
    c.head.status = static_cast<int>(status);
    return c.deliver_head() ? bytes : 0;
  }
  const auto colon = line.find(':');
  if (colon != std::string_view::npos && line.front() != ' ' && line.front() != '\t') {
    c.head.headers.add(std::string(trim(line.substr(0, colon))),
                       std::string(trim(line.substr(colon + 1))));
  }
  return bytes;
}

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto& c = *static_cast<Call*>(user);
  const std::size_t bytes = size * n;
  c.got_bytes = true;
  // Once the body flows, a caller that counts events says what is silence
  // (CallOptions::events_read).
  if (!c.head_done || !c.options->events_read) {
    c.heard();
  }
  if (!c.head_done) {
    long status = 0;
    curl_library().easy_getinfo(c.easy, CURLINFO_RESPONSE_CODE, &status);
    c.head.status = static_cast<int>(status);
    if (!c.deliver_head()) {
      return 0;
    }
  }
  if (bytes == 0) {
    return 0;
  }
  c.body_started = true;
  try {
    c.cancelled = !(*c.on_data)(std::string_view(data, bytes));
    if (c.options->events_read) {
      const std::uint64_t events = c.options->events_read();
      if (events != c.events_seen) {
        c.events_seen = events;
        c.heard();
      }
    }
  } catch (...) {
    c.thrown = std::current_exception();
  }
  return c.cancelled || c.thrown ? 0 : bytes;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t uploaded) {
  auto& c = *static_cast<Call*>(user);
  if (uploaded > c.uploaded) {
    c.uploaded = uploaded;  // a request body still being sent is no silence
    c.heard();
  }
  return 0;
}

int on_prereq(void* user, char*, char*, int, int) {
  auto& c = *static_cast<Call*>(user);
  c.connected = true;
  c.heard();
  return CURL_PREREQFUNC_OK;
}

thread_local Call* running_call = nullptr;

int on_close_socket(void*, curl_socket_t fd) {
  Call* c = running_call;
  if (c != nullptr && c->got_bytes &&
      std::find(c->used_sockets.begin(), c->used_sockets.end(), fd) != c->used_sockets.end()) {
    // The transfer's own socket, closed after a response began: did the
    // backend close its end? (Another kept connection may be closed during
    // this call too, found dead or too old.)
    pollfd p{fd, POLLRDHUP, 0};
    if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
      c->peer_closed = true;
    }
  }
  return ::close(fd);
}

}  // namespace

RunningCall::RunningCall(Call& call) : outer_(running_call) {
  running_call = &call;
}

RunningCall::~RunningCall() {
  running_call = outer_;
}

int on_socket(CURL*, curl_socket_t fd, int what, void* user, void*) {
  auto& call = *static_cast<Call*>(user);
  auto& sockets = call.sockets;
  auto it =
      std::find_if(sockets.begin(), sockets.end(), [fd](const pollfd& p) { return p.fd == fd; });
  if (what == CURL_POLL_REMOVE) {
    if (it != sockets.end()) {
      sockets.erase(it);
    }
    return 0;
  }
  short events = 0;
  if ((what & CURL_POLL_IN) != 0) {
    events |= POLLIN;
  }
  if ((what & CURL_POLL_OUT) != 0) {
    events |= POLLOUT;
  }
  if (it == sockets.end()) {
    sockets.push_back(pollfd{fd, events, 0});
    if (std::find(call.used_sockets.begin(), call.used_sockets.end(), fd) ==
        call.used_sockets.end()) {
      call.used_sockets.push_back(fd);
    }
  } else {
    it->events = events;
  }
  return 0;
}

int on_timer(CURLM*, long timeout_ms, void* user) {
  auto& c = *static_cast<Call*>(user);
  if (timeout_ms < 0) {
    c.curl_timer.reset();
  } else {
    c.curl_timer = Clock::now() + std::chrono::milliseconds(timeout_ms);
  }
  return 0;
}

Status configure_easy(const CurlLibrary& curl, CURL* e, curl_slist*& headers, Call& call,
                      const CurlUpstreamSettings& settings, const std::string& authorization,
                      const CallOptions& options, const net::UpstreamRequest& request,
                      CURLSH* share) {
  CURLcode failed = CURLE_OK;
  auto set = [&](CURLoption option, auto value) {
    CURLcode rc = curl.easy_setopt(e, option, value);
    if (rc != CURLE_OK && failed == CURLE_OK) {
      failed = rc;
    }
  };
  const std::string url = settings.base_url + (request.path.empty() ? "/" : request.path);
  set(CURLOPT_URL, url.c_str());
  set(CURLOPT_ERRORBUFFER, call.errbuf);
  set(CURLOPT_NOSIGNAL, 1L);
  set(CURLOPT_PROTOCOLS_STR, "http,https");
  set(CURLOPT_FOLLOWLOCATION, 0L);
  set(CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  set(CURLOPT_SSL_VERIFYPEER, 1L);
  set(CURLOPT_SSL_VERIFYHOST, 2L);
  if (!settings.ca_file.empty()) {
    // Replaces libcurl's CA bundle. The system's hashed CA folder is named
    // too, so the system store stays trusted whatever libcurl was built with.
    set(CURLOPT_CAINFO, settings.ca_file.c_str());
    static const bool system_dir = std::filesystem::is_directory("/etc/ssl/certs");
    if (system_dir) {
      set(CURLOPT_CAPATH, "/etc/ssl/certs");
    }
  }
  auto connect_ms = options.connect_timeout;
  if (options.total_timeout.count() > 0) {
    connect_ms = std::min(connect_ms, options.total_timeout);
  }
  set(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::max<long long>(1, connect_ms.count())));
  if (share != nullptr) {
    set(CURLOPT_SHARE, share);
  }
  set(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
  // A backend that vanishes from the network is found even with no idle
  // timeout (generation may legitimately be silent for minutes).
  set(CURLOPT_TCP_KEEPALIVE, 1L);
  set(CURLOPT_TCP_KEEPIDLE, 30L);
  set(CURLOPT_TCP_KEEPINTVL, 10L);
  set(CURLOPT_HEADERFUNCTION, on_header);
  set(CURLOPT_HEADERDATA, &call);
  set(CURLOPT_WRITEFUNCTION, on_body);
  set(CURLOPT_WRITEDATA, &call);
  set(CURLOPT_XFERINFOFUNCTION, on_progress);
  set(CURLOPT_XFERINFODATA, &call);
  set(CURLOPT_NOPROGRESS, 0L);
  set(CURLOPT_PREREQFUNCTION, on_prereq);
  set(CURLOPT_PREREQDATA, &call);
  set(CURLOPT_CLOSESOCKETFUNCTION, on_close_socket);
  set(CURLOPT_CLOSESOCKETDATA, nullptr);  // see RunningCall

  const bool authorized = !authorization.empty();
  const bool has_body =
      request.method != "GET" && request.method != "HEAD" &&
      (!request.body.empty() || !request.content_type.empty() || request.method == "POST" ||
       request.method == "PUT" || request.method == "PATCH");
  std::vector<std::string> lines;
  for (const auto& [name, value] : request.headers.fields()) {
    if (!skipped_header(name, request, authorized)) {
      std::string line = name;
      line += value.empty() ? ";" : ": ";
      line += value;
      lines.push_back(std::move(line));
    }
  }
  if (authorized) {
    lines.push_back("Authorization: " + authorization);
  }
  if (!request.content_type.empty()) {
    lines.push_back("Content-Type: " + request.content_type);
  } else if (!request.headers.has("Content-Type")) {
    lines.push_back("Content-Type:");  // no application/x-www-form-urlencoded
  }
  if (!request.headers.has("Accept")) {
    lines.push_back("Accept:");
  }
  lines.push_back("Expect:");  // no 100-continue round trip
  for (const auto& line : lines) {
    curl_slist* next = curl.slist_append(headers, line.c_str());
    if (next == nullptr) {
      return Error(ErrorCode::kInternal, "out of memory building a request");
    }
    headers = next;
  }
  set(CURLOPT_HTTPHEADER, headers);

  if (request.method == "HEAD") {
    set(CURLOPT_NOBODY, 1L);
  } else if (has_body || (request.method == "GET" && !request.body.empty())) {
    set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    set(CURLOPT_POSTFIELDS, request.body.empty() ? "" : request.body.data());
    if (request.method != "POST") {
      set(CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }
  } else {
    set(CURLOPT_HTTPGET, 1L);
    if (request.method != "GET") {
      set(CURLOPT_CUSTOMREQUEST, request.method.c_str());
    }
  }
  if (failed != CURLE_OK) {
    return Error(ErrorCode::kBackendUnavailable,
                 "cannot connect to backend " + settings.base_url +
                     ": libcurl refused an option: " + curl.easy_strerror(failed));
  }
  return ok_status();
}

}  // namespace lemon::download::curl_upstream_impl
