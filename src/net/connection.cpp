#include "connection.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <climits>
#include <exception>
#include <optional>

#include "io.h"
#include "lemon/core/error_envelope.h"
#include "lemon/core/log.h"
#include "request_reader.h"
#include "response_writer.h"
#include "websocket_loop.h"

namespace lemon::net::detail {
namespace {

// Tells the registry when a response's end goes out: the
// connection is idle from its last write on, and one chosen to make room
// while that write was under way is shut down once it is done.
class ResponseEndMarker final : public SocketResponseWriter::EndListener {
 public:
  ResponseEndMarker(ConnectionRegistry& registry, std::uint64_t id, int fd)
      : registry_(registry), id_(id), fd_(fd) {}
  void last_write_begins() override { registry_.response_ending(id_); }
  void last_write_done() override {
    ended_ = true;
    if (!registry_.response_ended(id_)) {
      ::shutdown(fd_, SHUT_RDWR);
    }
  }
  bool ended() const { return ended_; }

 private:
  ConnectionRegistry& registry_;
  const std::uint64_t id_;
  const int fd_;
  bool ended_ = false;
};

// How long an error response waits for the client to stop sending before the
// connection is closed (closing with unread data would reset the connection
// and could destroy the response before the client reads it).
constexpr std::chrono::milliseconds kErrorLinger{1000};

}  // namespace

ClientConnection::ClientConnection(PendingConnection pending, const ConnectionContext& context)
    : pending_(std::move(pending)),
      fd_(pending_.fd),
      context_(context),
      reader_(fd_.get(), *context.options, *context.memory, context.stop_fd) {
  pending_.fd = -1;
}

ClientConnection::~ClientConnection() {
  close_quietly();
}

void ClientConnection::close_quietly() {
  if (!fd_.valid()) {
    return;
  }
  // Discard anything unread (a pipelined request after Connection: close)
  // so the close is a FIN, not a reset.
  pending_.release();
  lingering_close(fd_, std::chrono::milliseconds(0), -1);
}

void ClientConnection::refuse_busy() {
  pending_.release();
  if (fd_.valid()) {
    reject_busy(fd_.release());
  }
}

ClientConnection::After ClientConnection::serve(bool may_park) {
  const ServerOptions& options = *context_.options;
  for (bool first = true;; first = false) {
    if (may_park && !first && !reader_.has_buffered_bytes() &&
        !context_.stopping->load(std::memory_order_relaxed)) {
      // A client that sends its next request at once (most do, under load)
      // is waited for here: a poll is cheaper than parking and waking. One
      // that takes longer is parked, and holds no thread while idle.
      const auto hold = std::min(
          {options.park_after, options.keep_alive_timeout, std::chrono::milliseconds(INT_MAX)});
      const bool held = hold.count() > 0;
      if (!held || wait_fd(fd_.get(), POLLIN, static_cast<int>(hold.count()), context_.stop_fd,
                           POLLIN) == Wait::kTimeout) {
        if (held && hold >= options.keep_alive_timeout) {
          break;  // idle for the whole keep-alive already
        }
        reader_.done_with_body();
        return After::kPark;
      }
    }
    Request request;
    request.remote_addr = pending_.remote_addr;  // the HeadCheck sees it too
    ReadOutcome outcome = reader_.read(request);
    if (outcome.kind == ReadOutcome::Kind::kClosed) {
      break;
    }
    if (outcome.kind == ReadOutcome::Kind::kReject) {
      const Error& rejection = *outcome.rejection;
      logger("http")->debug("rejecting request from {}: {} {}", pending_.remote_addr,
                            error_status(rejection), rejection.message());
      SocketResponseWriter writer(fd_.get(), ResponseMode{outcome.head_request, false, false},
                                  nullptr, options.write_timeout);
      writer.send_error(rejection);
      pending_.release();
      lingering_close(fd_, kErrorLinger, context_.stop_fd);
      return After::kClosed;
    }
    if (outcome.kind == ReadOutcome::Kind::kAnswer) {
      // The HeadCheck refused the request (route, key): answered without
      // reading its body, then closed.
      SocketResponseWriter writer(fd_.get(), ResponseMode{outcome.head_request, false, false},
                                  nullptr, options.write_timeout);
      writer.send(outcome.answer.status, outcome.answer.headers, outcome.answer.body);
      pending_.release();
      lingering_close(fd_, kErrorLinger, context_.stop_fd);
      return After::kClosed;
    }
    if (context_.stopping->load(std::memory_order_relaxed)) {
      // Draining: requests that were already running finish; new ones are
      // refused so the client retries elsewhere or later.
      SocketResponseWriter writer(fd_.get(), ResponseMode{outcome.head_request, false, false},
                                  nullptr, options.write_timeout);
      writer.send_error(
          Error(ErrorCode::kDraining, "the server is shutting down").with_retry_after(1));
      break;
    }
    ConnectionRegistry* registry = pending_.registry;
    const std::uint64_t registry_id = pending_.registry_id;
    if (registry != nullptr && !registry->mark_busy(registry_id)) {
      break;  // closed to make room for another connection
    }
    const bool stopping = context_.stopping->load(std::memory_order_relaxed);
    ResponseMode mode{outcome.head_request, outcome.http10, outcome.keep_alive && !stopping};
    SocketResponseWriter writer(fd_.get(), mode, context_.stopping, options.write_timeout);
    if (context_.websockets != nullptr && !stopping) {
      writer.allow_upgrade(context_.websockets, &pending_.remote_addr);
    }
    // Idle from the moment the client can see the response end, not from
    // when this thread gets back here: a connection served earlier is never
    // younger than one served later.
    std::optional<ResponseEndMarker> end_marker;
    if (registry != nullptr) {
      end_marker.emplace(*registry, registry_id, fd_.get());
      writer.set_end_listener(&*end_marker);
    }
    bool threw = false;
    try {
      (*context_.handler)(request, writer);
    } catch (const std::exception& e) {
      threw = true;
      logger("http")->error("handler for {} {} threw: {}", request.method, request.path, e.what());
    } catch (...) {
      threw = true;
      logger("http")->error("handler for {} {} threw a non-standard exception", request.method,
                            request.path);
    }
    if (auto upgrade = writer.take_upgrade()) {
      // A WebSocket now (its 101 is out): the WebSocket thread serves it,
      // from the bytes that came after the handshake on.
      reader_.done_with_body();
      std::string already_read = reader_.take_buffered();
      std::string remote_addr = pending_.remote_addr;
      pending_.release();
      context_.websockets->adopt(fd_.release(), std::move(remote_addr), std::move(already_read),
                                 std::move(upgrade->handler), upgrade->max_message);
      return After::kClosed;
    }
    if (!writer.headers_sent()) {
      if (!threw) {
        logger("http")->error("handler for {} {} wrote no response", request.method, request.path);
      }
      writer.send_error(Error(ErrorCode::kInternal,
                              threw ? "internal server error" : "the handler wrote no response"));
    }
    if (registry != nullptr && !(end_marker->ended() ? registry->is_open(registry_id)
                                                     : registry->mark_idle(registry_id))) {
      break;  // closed to make room for another connection
    }
    if (!writer.reusable()) {
      break;
    }
  }
  close_quietly();
  return After::kClosed;
}

void reject_busy(int raw_fd) {
  UniqueFd fd(raw_fd);
  SocketResponseWriter writer(fd.get(), ResponseMode{false, false, false}, nullptr);
  writer.send_error(Error(ErrorCode::kServerBusy, "server is busy: too many open connections"));
  lingering_close(fd, std::chrono::milliseconds(0), -1);
}

}  // namespace lemon::net::detail
