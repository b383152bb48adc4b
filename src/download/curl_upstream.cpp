#include "lemon/download/curl_upstream.h"

#include <poll.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <exception>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "curl_library.h"
#include "curl_upstream_call.h"

namespace lemon::download {
namespace curl_upstream_impl {

constexpr std::chrono::milliseconds kMinTick{10};
// How long an answer may take to arrive once a backend that reported work in
// progress no longer does (as in net/upstream_exchange.cpp).
constexpr std::chrono::milliseconds kFinishGrace{250};
// The longest poll() without asking libcurl about its timers (a safety net:
// libcurl reports them through the timer callback).
constexpr int kMaxPollMs = 1000;
// The most idle connections the share keeps. libcurl's default follows the
// multi handle's transfers (four each); every call has a multi handle of its
// own, so without this a fifth call at once would close a kept connection
// each time one ends.
constexpr long kMaxKeptConnections = 64;

// The handles of one call, released in order (they call back into the
// Call, which outlives them).
struct Handles {
  const CurlLibrary& curl;
  CURL* easy = nullptr;
  CURLM* multi = nullptr;
  curl_slist* headers = nullptr;
  bool added = false;
  ~Handles() {
    if (added) {
      curl.multi_remove_handle(multi, easy);
    }
    if (easy != nullptr) {
      curl.easy_cleanup(easy);
    }
    if (multi != nullptr) {
      curl.multi_cleanup(multi);
    }
    curl.slist_free_all(headers);
  }
};

class Transfer {
 public:
  Transfer(const CurlUpstreamSettings& settings, const std::string& authorization,
           const CallOptions& options, CURLSH* share)
      : settings_(settings), authorization_(authorization), options_(options), share_(share) {}

  Status run(const net::UpstreamRequest& request,
             const std::function<bool(const net::UpstreamHead&)>& on_head,
             const std::function<bool(std::string_view)>& on_data);

 private:
  Status drive(CURLM* multi);
  // The outcome of a finished transfer.
  Status classify(CURLcode rc) const;
  Error unreachable(const std::string& why) const {
    return Error(ErrorCode::kBackendUnavailable,
                 "cannot connect to backend " + settings_.base_url + ": " + why);
  }
  std::string curl_error(CURLcode rc) const {
    return call_.errbuf[0] != '\0' ? std::string(call_.errbuf)
                                   : std::string(curl_library().easy_strerror(rc));
  }

  const CurlUpstreamSettings& settings_;
  const std::string& authorization_;
  const CallOptions& options_;
  CURLSH* share_;
  Call call_;  // outlives the Handles of run()
};

Status Transfer::run(const net::UpstreamRequest& request,
                     const std::function<bool(const net::UpstreamHead&)>& on_head,
                     const std::function<bool(std::string_view)>& on_data) {
  const CurlLibrary& curl = curl_library();
  if (!curl.loaded) {
    return unreachable("libcurl is not available (" + curl.error + ")");
  }
  call_.options = &options_;
  call_.on_head = &on_head;
  call_.on_data = &on_data;
  RunningCall running(call_);  // outlives the handles, whose release may close sockets
  Handles h{curl};
  h.easy = curl.easy_init();
  h.multi = curl.multi_init();
  if (h.easy == nullptr || h.multi == nullptr) {
    return unreachable("libcurl cannot start a transfer");
  }
  call_.easy = h.easy;
  if (auto configured = configure_easy(curl, h.easy, h.headers, call_, settings_, authorization_,
                                       options_, request, share_);
      !configured.ok()) {
    return configured;
  }
  curl.multi_setopt(h.multi, CURLMOPT_MAXCONNECTS, kMaxKeptConnections);
  curl.multi_setopt(h.multi, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl.multi_setopt(h.multi, CURLMOPT_SOCKETDATA, &call_);
  curl.multi_setopt(h.multi, CURLMOPT_TIMERFUNCTION, on_timer);
  curl.multi_setopt(h.multi, CURLMOPT_TIMERDATA, &call_);
  if (CURLMcode rc = curl.multi_add_handle(h.multi, h.easy); rc != CURLM_OK) {
    return unreachable(std::string("libcurl cannot start a transfer: ") + curl.multi_strerror(rc));
  }
  h.added = true;
  return drive(h.multi);
}

Status Transfer::drive(CURLM* multi) {
  const CurlLibrary& curl = curl_library();
  const auto start = Clock::now();
  std::optional<Clock::time_point> total_deadline;
  if (options_.total_timeout.count() > 0) {
    total_deadline = start + options_.total_timeout;
  }
  const auto tick = std::max(options_.tick_interval, kMinTick);
  auto next_tick = start + tick;
  short watch_events = POLLRDHUP;
  bool reported_working = false;
  bool grace_used = false;
  int running = 0;
  std::vector<pollfd> fds;
  for (;;) {
    // Has it finished?
    if (call_.thrown) {
      std::rethrow_exception(call_.thrown);
    }
    int left = 0;
    while (CURLMsg* msg = curl.multi_info_read(multi, &left)) {
      if (msg->msg == CURLMSG_DONE) {
        return classify(msg->data.result);
      }
    }
    const auto now = Clock::now();
    if (total_deadline && now >= *total_deadline) {
      if (!call_.connected) {
        return unreachable("timed out after " + std::to_string(options_.total_timeout.count()) +
                           " ms");
      }
      return Error(ErrorCode::kGatewayTimeout,
                   "backend " + settings_.base_url + " did not finish in time");
    }
    if (call_.idle_deadline && now >= *call_.idle_deadline) {
      // Silence before the answer begins may be a long prompt being read:
      // a backend that says it is still working gets another recheck period.
      bool more = false;
      const bool begun = options_.answer_started ? options_.answer_started() : call_.body_started;
      if (!begun && options_.still_working) {
        if (options_.still_working()) {
          reported_working = true;
          more = true;
          call_.idle_deadline = Clock::now() + std::max(options_.working_recheck, kMinTick);
        } else if (reported_working && !grace_used) {
          grace_used = true;
          more = true;
          call_.idle_deadline = Clock::now() + kFinishGrace;
        }
      }
      if (!more) {
        return Error(ErrorCode::kGatewayTimeout,
                     "backend " + settings_.base_url + " sent nothing for " +
                         std::to_string(options_.idle_timeout.count()) + " ms");
      }
    }
    if (options_.on_tick && now >= next_tick) {
      if (!options_.on_tick()) {
        return Error(ErrorCode::kCancelled, "request cancelled");
      }
      next_tick = Clock::now() + tick;
    }

    // Wait for libcurl's sockets, the watched client or the next deadline.
    int timeout = kMaxPollMs;
    auto consider = [&timeout](std::optional<Clock::time_point> tp) {
      if (tp) {
        auto ms = std::chrono::ceil<std::chrono::milliseconds>(*tp - Clock::now()).count();
        timeout = static_cast<int>(std::clamp<long long>(ms, 0, timeout));
      }
    };
    consider(call_.curl_timer);
    consider(total_deadline);
    consider(call_.idle_deadline);
    if (options_.on_tick) {
      consider(next_tick);
    }
    fds = call_.sockets;
    const std::size_t curl_count = fds.size();
    if (options_.watch_fd >= 0) {
      fds.push_back(pollfd{options_.watch_fd, watch_events, 0});
    }
    int ready = ::poll(fds.data(), fds.size(), timeout);
    if (ready < 0) {
      if (errno == EINTR) {
        continue;
      }
      return Error(ErrorCode::kInternal, "poll failed: " + errno_message(errno));
    }
    if (ready > 0 && options_.watch_fd >= 0 &&
        net::watched_client_gone(fds[curl_count].revents, watch_events, options_)) {
      return Error(ErrorCode::kCancelled, "client disconnected");
    }
    for (std::size_t i = 0; ready > 0 && i < curl_count; ++i) {
      if (fds[i].revents != 0) {
        // 0: libcurl checks the socket itself (a hang-up is then a read).
        curl.multi_socket_action(multi, fds[i].fd, 0, &running);
      }
    }
    if (ready == 0 || (call_.curl_timer && Clock::now() >= *call_.curl_timer)) {
      call_.curl_timer.reset();  // libcurl sets the next one as it runs
      curl.multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
  }
}

Status Transfer::classify(CURLcode rc) const {
  if (call_.cancelled) {
    return Error(ErrorCode::kCancelled, "request cancelled");
  }
  if (rc == CURLE_OK) {
    if (!call_.head_done) {
      // libcurl takes a connection closed within the head for its end.
      return Error(ErrorCode::kBackendCrashed, "connection to backend " + settings_.base_url +
                                                   " was lost within the response head");
    }
    return ok_status();
  }
  const std::string why = curl_error(rc);
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:  // only the connect timeout is libcurl's
      return unreachable(why);
    case CURLE_PEER_FAILED_VERIFICATION:
      return unreachable("its TLS certificate is not trusted (" + why + ")");
    case CURLE_SSL_CACERT_BADFILE:
      return unreachable("TLS failed: the CA file " + settings_.ca_file + " cannot be used (" +
                         why + ")");
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
    case CURLE_USE_SSL_FAILED:
      return unreachable("TLS failed, the certificate or handshake was not accepted (" + why + ")");
    case CURLE_WRITE_ERROR:
    case CURLE_OUT_OF_MEMORY:
      return Error(ErrorCode::kInternal,
                   "the call to backend " + settings_.base_url + " failed: " + why);
    default:
      break;
  }
  if (!call_.connected) {
    return unreachable(why);  // a malformed URL, an unsupported scheme, ...
  }
  // A receive error with the backend's end still open is something libcurl
  // could not parse (a bad chunk, a head too large): garbage.
  const bool lost = rc == CURLE_SEND_ERROR || rc == CURLE_GOT_NOTHING || rc == CURLE_PARTIAL_FILE ||
                    (rc == CURLE_RECV_ERROR && (!call_.got_bytes || call_.peer_closed));
  const std::string endpoint = settings_.base_url;
  if (!lost) {
    return Error(ErrorCode::kUpstreamProtocol,
                 "malformed response from backend " + endpoint + ": " + why);
  }
  if (!call_.got_bytes) {
    // Nothing was answered: the caller may try again.
    return Error(ErrorCode::kBackendUnavailable,
                 "connection to backend " + endpoint + " was lost before it answered: " + why);
  }
  if (call_.head_done && call_.length_framed) {
    return Error(ErrorCode::kUpstreamProtocol, "malformed response from backend " + endpoint +
                                                   ": the body ended short of its "
                                                   "Content-Length (" +
                                                   why + ")");
  }
  return Error(ErrorCode::kBackendCrashed,
               "connection to backend " + endpoint + " was lost mid-response: " + why);
}

}  // namespace curl_upstream_impl

// A libcurl share of connections, TLS sessions and resolved names, with a
// lock per kind of data it holds (libcurl takes them from every thread that
// runs a call).
class CurlUpstreamClient::ConnectionShare {
 public:
  ConnectionShare() {
    const CurlLibrary& curl = curl_library();
    if (!curl.loaded) {
      return;
    }
    handle_ = curl.share_init();
    if (handle_ == nullptr) {
      return;
    }
    bool ok = curl.share_setopt(handle_, CURLSHOPT_LOCKFUNC, lock) == CURLSHE_OK;
    ok = curl.share_setopt(handle_, CURLSHOPT_UNLOCKFUNC, unlock) == CURLSHE_OK && ok;
    ok = curl.share_setopt(handle_, CURLSHOPT_USERDATA, this) == CURLSHE_OK && ok;
    ok = curl.share_setopt(handle_, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) == CURLSHE_OK && ok;
    // Sessions and names help a new connection; they are not needed for reuse.
    curl.share_setopt(handle_, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    curl.share_setopt(handle_, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    if (!ok) {
      curl.share_cleanup(handle_);
      handle_ = nullptr;
    }
  }
  ~ConnectionShare() {
    if (handle_ != nullptr) {
      curl_library().share_cleanup(handle_);  // closes the kept connections
    }
  }
  ConnectionShare(const ConnectionShare&) = delete;
  ConnectionShare& operator=(const ConnectionShare&) = delete;

  CURLSH* handle() const { return handle_; }

 private:
  std::mutex& mutex_for(curl_lock_data data) {
    const auto i = static_cast<std::size_t>(data);
    return mutexes_[i < mutexes_.size() ? i : 0];
  }
  static void lock(CURL*, curl_lock_data data, curl_lock_access, void* user) {
    static_cast<ConnectionShare*>(user)->mutex_for(data).lock();
  }
  static void unlock(CURL*, curl_lock_data data, void* user) {
    static_cast<ConnectionShare*>(user)->mutex_for(data).unlock();
  }

  std::array<std::mutex, CURL_LOCK_DATA_LAST> mutexes_;
  CURLSH* handle_ = nullptr;
};

CurlUpstreamClient::~CurlUpstreamClient() = default;

CurlUpstreamClient::ConnectionShare* CurlUpstreamClient::share() {
  std::call_once(share_once_, [this] { share_ = std::make_unique<ConnectionShare>(); });
  return share_.get();
}

CurlUpstreamClient::CurlUpstreamClient(CurlUpstreamSettings settings)
    : settings_(std::move(settings)),
      authorization_(settings_.bearer_token.empty() ? std::string()
                                                    : "Bearer " + settings_.bearer_token) {
  while (!settings_.base_url.empty() && settings_.base_url.back() == '/') {
    settings_.base_url.pop_back();
  }
}

Status CurlUpstreamClient::stream(const net::UpstreamRequest& request,
                                  const net::CallOptions& options,
                                  const std::function<bool(const net::UpstreamHead&)>& on_head,
                                  const std::function<bool(std::string_view)>& on_data) {
  ConnectionShare* connections = share();
  curl_upstream_impl::Transfer transfer(settings_, authorization_, options,
                                        connections != nullptr ? connections->handle() : nullptr);
  return transfer.run(request, on_head, on_data);
}

}  // namespace lemon::download
