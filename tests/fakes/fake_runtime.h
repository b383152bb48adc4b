// Process-wide state of a fake backend and the HTTP server lifecycle shared by
// all fakes: readiness ("loading" period), request counters exposed on
// GET /fake/state, access logging, signal handling and binding.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <httplib.h>

#include "fake_knobs.h"

namespace fake {

struct Counters {
  std::atomic<long> requests{0};               // inference requests received (admitted)
  std::atomic<long> completed{0};              // inference requests fully answered
  std::atomic<long> active{0};                 // inference requests in progress
  std::atomic<long> cancelled{0};              // client went away before the answer ended
  std::atomic<long> resets{0};                 // connections reset by reset_first_requests
  std::atomic<long> template_rejections{0};    // chats refused by template_rules
  std::atomic<long> template_applications{0};  // POST /apply-template answered
  std::atomic<long> tokenizations{0};          // POST /tokenize answered
};

struct Runtime {
  std::string program;  // the imitated program's name, e.g. "llama-server"
  std::vector<std::string> argv;
  std::string model;  // model path / checkpoint as given on the command line
  std::string host = "127.0.0.1";
  int port = 8080;
  Knobs knobs;
  Counters counters;
  int64_t start_ns = 0;
  std::atomic<int64_t> ready_at_ns{0};  // 0 = not listening yet / never ready
  std::atomic<bool> stopping{false};
  // As sd-server, which installs no signal handler: SIGTERM ends the
  // process by its default action (killed by signal 15), with no shutdown.
  bool sigterm_kills = false;
  // llama-server's --sse-ping-interval (seconds; <= 0: no pings).
  int sse_ping_interval_s = 30;
  // llama-server's router child mode (fake_child_mode.h): told of the
  // load's progress (0 to 1) as it goes, then once it is ready; and the
  // shutdown asks it whether the process may exit yet.
  std::function<void(double)> on_load_progress;
  std::function<void()> on_loaded;
  std::function<void()> before_exit;
};

// The single runtime of this process.
Runtime& runtime();

// First call in main(): line-buffers stdout, records argv and the start time.
void init_runtime(const char* program, int argc, char** argv);

// Prints the exit_at_start message and exits when that knob is set.
void apply_exit_at_start();
// The oom_while_siblings_above knob: llama.cpp's out-of-memory lines, exit 1.
void apply_oom_at_start(const std::string& model);

// Keeps the body of the last chat or completion request for /fake/state's
// "last_request" (tests check what the router sent).
void remember_request(const nlohmann::json& body);

// True once the simulated model load has finished (health answers 200).
bool is_ready();
// Milliseconds from process start until readiness, or -1 while not ready.
long ready_after_ms();

// Writes llama.cpp's error JSON: {"error":{"code","message","type"}}.
std::string llama_error_json(int code, const std::string& message, const std::string& type);
// 503 "Loading model" in llama.cpp's shape.
void reply_loading(httplib::Response& res);
// The llama.cpp-style GET /health handler (503 while loading, then 200).
void health_handler(const httplib::Request& req, httplib::Response& res);

// The clean shutdown a first SIGTERM starts, started by the program itself
// (llama-server's exit command in child mode): not counted as a signal.
void request_shutdown();

// Registers `handler` for each of `paths`.
void get_routes(httplib::Server& svr, const std::vector<std::string>& paths,
                const httplib::Server::Handler& handler);
void post_routes(httplib::Server& svr, const std::vector<std::string>& paths,
                 const httplib::Server::Handler& handler);

// Applies the common server settings, adds GET /fake/state, installs signal
// handling, binds host:port (prints the bind error and exits 1 on failure),
// prints the listening lines plus `banner` lines (with "{host}" and "{port}"
// substituted), starts the loading timer and
// serves until SIGTERM/SIGINT. Never returns.
[[noreturn]] void serve(httplib::Server& svr, const std::vector<std::string>& banner);

}  // namespace fake
