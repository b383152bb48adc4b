// One upgraded socket: the WebSocket its handler is given, the frames it
// reads (checked and reassembled, websocket_frame.h), the queue of frames it
// writes, and its timers (pings, the close handshake, a write that makes no
// progress, the handler's deadline).
//
// Two sides. What any thread may call (WebSocket's methods) only queues,
// under the connection's lock, and asks the loop to come (`Scheduler`);
// nothing else writes to the socket. What the loop thread calls (read(),
// flush(), tick(), end()) does the I/O, without blocking (MSG_DONTWAIT), and
// calls the handler, with no lock held.
//
// Internal to src/net. Thread-safety: as above.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "io.h"
#include "lemon/core/mutex.h"
#include "lemon/net/websocket.h"
#include "websocket_frame.h"

namespace lemon::net::detail {

class WebSocketConnection;

// Where a connection asks to be looked at by the loop thread (to flush its
// queue or call on_wake()). Takes no lock a logger holds, never blocks.
class WebSocketScheduler {
 public:
  virtual ~WebSocketScheduler() = default;
  virtual void schedule(std::uint64_t id) = 0;
};

class WebSocketConnection final : public WebSocket {
 public:
  WebSocketConnection(WebSocketScheduler& scheduler, const WebSocketOptions& options,
                      std::uint64_t id, int fd, std::string remote_addr,
                      std::shared_ptr<WebSocketHandler> handler, std::size_t max_message);
  ~WebSocketConnection() override;

  // WebSocket: any thread.
  Sent send_text(std::string_view text) override;
  void close(std::uint16_t code, std::string_view reason) override;
  void abandon(std::uint16_t code, std::string_view reason) override;
  void wake() override;
  void set_max_message(std::size_t bytes) override;
  void set_deadline(Clock::time_point when, std::uint16_t code, std::string_view reason) override;
  void clear_deadline() override;
  std::size_t queued_bytes() const override;
  const std::string& remote_addr() const override { return remote_addr_; }

  // The loop thread's side.
  std::uint64_t id() const { return id_; }
  int fd() const { return fd_.get(); }
  // Starts it: on_open(), then the bytes read with the handshake.
  void open(const std::shared_ptr<WebSocketConnection>& self, std::string already_read,
            Clock::time_point now);
  // Reads what the socket has (a bounded amount, so one client cannot
  // starve the others) and handles its frames.
  void read(Clock::time_point now);
  // Writes what the client accepts now; true while bytes wait for POLLOUT.
  bool flush(Clock::time_point now);
  // The loop took up a schedule() of this connection: a later change asks
  // for it again.
  void taken_up();
  // on_wake() if asked for.
  void run_wake();
  // The timers: pings, deadlines, the close handshake, a stalled write.
  void tick(Clock::time_point now);
  // When tick() next has something to do, as refresh_timer() last found.
  Clock::time_point next_timer() const { return next_timer_; }
  // Works next_timer() out again (after a deadline set from another thread).
  void refresh_timer();
  // Closes with 1001 (the server stops).
  void going_away() { close_with(close_code::kGoingAway, "server is shutting down", false); }
  // Nothing more will happen: the socket is to be ended.
  bool finished() const { return finished_; }
  // Calls on_closed() (once), drops the handler and closes the socket.
  void end();

 private:
  // Queues a close frame (dropping queued data first when `discard`).
  void close_with(std::uint16_t code, std::string_view reason, bool discard);
  // Fails the connection (RFC 6455 §7.1.7): the close frame, then the end,
  // without waiting for the client's.
  void fail(const ws::FrameError& error);
  void handle(ws::Frame frame, Clock::time_point now);
  void on_control(ws::Opcode opcode, std::string payload, Clock::time_point now);
  // Asks the loop to come, once until it does.
  void come_locked() LEMON_REQUIRES(mu_);

  WebSocketScheduler& scheduler_;
  const WebSocketOptions& options_;
  const std::uint64_t id_;
  const std::string remote_addr_;

  // Shared with every thread, under mu_.
  mutable Mutex mu_;
  std::deque<std::string> queue_ LEMON_GUARDED_BY(mu_);    // whole frames, oldest first
  std::size_t front_written_ LEMON_GUARDED_BY(mu_) = 0;    // bytes of queue_.front() sent
  std::size_t queued_ LEMON_GUARDED_BY(mu_) = 0;           // data bytes in queue_ not yet sent
  std::optional<std::string> pong_ LEMON_GUARDED_BY(mu_);  // the latest ping's payload
  bool ping_due_ LEMON_GUARDED_BY(mu_) = false;            // our keep-alive ping
  std::optional<std::string> close_frame_ LEMON_GUARDED_BY(mu_);
  bool closing_ LEMON_GUARDED_BY(mu_) = false;  // close() ran: nothing more is queued
  bool ended_ LEMON_GUARDED_BY(mu_) = false;
  bool wake_ LEMON_GUARDED_BY(mu_) = false;
  bool scheduled_ LEMON_GUARDED_BY(mu_) = false;  // the loop was asked to come
  std::size_t max_message_ LEMON_GUARDED_BY(mu_);
  std::optional<Clock::time_point> deadline_ LEMON_GUARDED_BY(mu_);
  std::uint16_t deadline_code_ LEMON_GUARDED_BY(mu_) = close_code::kPolicyViolation;
  std::string deadline_reason_ LEMON_GUARDED_BY(mu_);

  // The loop thread's alone.
  UniqueFd fd_;
  std::shared_ptr<WebSocketHandler> handler_;
  std::string input_;
  ws::MessageAssembler assembler_;
  Clock::time_point last_read_;
  Clock::time_point last_write_progress_;
  std::optional<Clock::time_point> ping_sent_;
  std::optional<Clock::time_point> close_sent_;  // our close frame is out
  bool close_received_ = false;
  std::uint16_t received_code_ = close_code::kAbnormal;
  bool failed_ = false;  // fail(): end once the close frame is out (or cannot be)
  bool finished_ = false;
  Clock::time_point ping_window_;
  int pings_in_window_ = 0;
  Clock::time_point next_timer_;
};

}  // namespace lemon::net::detail
