// The server's WebSocket thread: every upgraded socket of a server waits in
// its epoll set, so an open WebSocket holds no thread (the same rule as
// for idle connections). One thread serves them all: it reads what arrives,
// writes what is queued as each client accepts it, runs the timers, and
// calls the handlers, which must not block.
//
// Admission: reserve() before the 101 is written (a place among
// max_sockets and max_sockets_per_client, or a refusal the caller answers
// with 503), adopt() once it is out. The thread starts with the first
// socket.
//
// Stop: every socket is sent a close frame (1001) and given the close
// handshake's time, bounded, to answer; then the thread ends them all and
// exits. stop() never blocks; join() waits for the thread.
//
// Internal to src/net. Thread-safety: reserve(), unreserve(), adopt() and
// stop() from any thread; join() from the thread that runs the server.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "io.h"
#include "lemon/core/mutex.h"
#include "lemon/net/websocket.h"
#include "websocket_connection.h"

namespace lemon::net::detail {

class WebSocketLoop final : public WebSocketScheduler {
 public:
  explicit WebSocketLoop(WebSocketOptions options);
  ~WebSocketLoop() override;  // stop() and join()
  WebSocketLoop(const WebSocketLoop&) = delete;
  WebSocketLoop& operator=(const WebSocketLoop&) = delete;

  // A place for one more socket from `address`; false when none is left or
  // the loop stops.
  bool reserve(const std::string& address);
  // Gives back a place reserve() took and adopt() will not use.
  void unreserve(const std::string& address);
  // Takes an upgraded socket (whose 101 is out) and the bytes read after
  // its handshake; on_open() runs on the loop thread. Its place was reserved.
  void adopt(int fd, std::string remote_addr, std::string already_read,
             std::shared_ptr<WebSocketHandler> handler, std::size_t max_message);

  void stop();
  void join();

  // Sockets open or reserved now.
  int open() const;
  const WebSocketOptions& options() const { return options_; }

  // WebSocketScheduler.
  void schedule(std::uint64_t id) override;

 private:
  struct Adoption {
    int fd = -1;
    std::string remote_addr;
    std::string already_read;
    std::shared_ptr<WebSocketHandler> handler;
    std::size_t max_message = 0;
  };

  void run();
  void signal();
  void take_adoptions(Clock::time_point now);
  void service(const std::shared_ptr<WebSocketConnection>& c, Clock::time_point now);
  void end(std::uint64_t id);
  void watch(WebSocketConnection& c, bool want_write);

  const WebSocketOptions options_;
  UniqueFd epoll_;
  UniqueFd event_;  // eventfd: adoptions, schedules, stop

  mutable Mutex mu_;
  bool started_ LEMON_GUARDED_BY(mu_) = false;
  bool stopping_ LEMON_GUARDED_BY(mu_) = false;
  bool exited_ LEMON_GUARDED_BY(mu_) = false;  // run() returned
  int open_ LEMON_GUARDED_BY(mu_) = 0;
  std::map<std::string, int> per_address_ LEMON_GUARDED_BY(mu_);
  std::vector<Adoption> adoptions_ LEMON_GUARDED_BY(mu_);
  std::vector<std::uint64_t> scheduled_ LEMON_GUARDED_BY(mu_);
  bool signalled_ LEMON_GUARDED_BY(mu_) = false;  // the eventfd holds a wake-up
  std::thread thread_;

  // The loop thread's alone.
  struct Entry {
    std::shared_ptr<WebSocketConnection> connection;
    bool want_write = false;
  };
  std::unordered_map<std::uint64_t, Entry> sockets_;
  std::uint64_t next_id_ = 1;
};

}  // namespace lemon::net::detail
