// The pieces of one CurlUpstreamClient call (curl_upstream.cpp): the state
// its libcurl callbacks share with the loop that drives it, the callbacks,
// and the easy handle's options.
//
// Internal to src/download. Thread-safety: a Call belongs to the thread
// running its transfer.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "curl_library.h"
#include "lemon/download/curl_upstream.h"

namespace lemon::download {
// A named namespace, not an anonymous one: unity builds compile these files
// together with the other download sources.
namespace curl_upstream_impl {

using Clock = std::chrono::steady_clock;
using net::CallOptions;

// What one call's callbacks share with the loop that drives it.
struct Call {
  const CallOptions* options = nullptr;
  const std::function<bool(const net::UpstreamHead&)>* on_head = nullptr;
  const std::function<bool(std::string_view)>* on_data = nullptr;
  CURL* easy = nullptr;
  std::vector<pollfd> sockets;                  // the ones libcurl wants watched
  std::optional<Clock::time_point> curl_timer;  // when libcurl wants to be called
  std::optional<Clock::time_point> idle_deadline;
  bool connected = false;         // connected (TLS included): the request is on its way
  bool got_bytes = false;         // a byte of a response arrived
  bool head_done = false;         // the final head was passed to on_head
  bool body_started = false;      // a byte of its body was passed to on_data
  std::uint64_t events_seen = 0;  // CallOptions::events_read when last heard
  bool length_framed = false;
  bool peer_closed = false;  // the backend had closed its end when libcurl closed the socket
  bool cancelled = false;    // on_head or on_data returned false
  std::exception_ptr thrown;
  curl_off_t uploaded = 0;
  net::UpstreamHead head;
  std::vector<curl_socket_t> used_sockets;  // every socket libcurl had watched for it
  char errbuf[CURL_ERROR_SIZE] = {};

  // An answer's byte, or a request body's: the idle timeout starts again.
  void heard();
  // Passes the final head to on_head; false aborts the transfer.
  bool deliver_head();
};

// The call this thread runs, from its handles' making to their release.
// libcurl's close-socket callback reads it: a kept connection outlives the
// call that opened it and may be closed during another one, so the
// callback's own pointer cannot name the call.
class RunningCall {
 public:
  explicit RunningCall(Call& call);
  ~RunningCall();
  RunningCall(const RunningCall&) = delete;
  RunningCall& operator=(const RunningCall&) = delete;

 private:
  Call* outer_;  // a call this one runs within, if any
};

// Sets every option of `e` for `request`; its callbacks share `call`.
// `headers` gets the request's header list, to free after the easy handle.
// `share`, when not null, is the client's connection cache.
Status configure_easy(const CurlLibrary& curl, CURL* e, curl_slist*& headers, Call& call,
                      const CurlUpstreamSettings& settings, const std::string& authorization,
                      const CallOptions& options, const net::UpstreamRequest& request,
                      CURLSH* share);

// The multi handle's callbacks; their user pointer is the Call.
int on_socket(CURL*, curl_socket_t fd, int what, void* user, void*);
int on_timer(CURLM*, long timeout_ms, void* user);

}  // namespace curl_upstream_impl
}  // namespace lemon::download
