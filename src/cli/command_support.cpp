// What the commands share: error lines, Ctrl-C, and following a progress
// stream (pull, recipes --install).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <iostream>

#include "lemon/cli/commands.h"
#include "lemon/cli/progress_board.h"
#include "lemon/cli/sse_events.h"

namespace lemon::cli {
namespace {

std::atomic<bool> g_interrupted{false};
int g_interrupt_pipe[2] = {-1, -1};

extern "C" void on_interrupt(int) {
  g_interrupted.store(true);
  if (g_interrupt_pipe[1] >= 0) {
    char one = 1;
    [[maybe_unused]] auto n = ::write(g_interrupt_pipe[1], &one, 1);
  }
}

}  // namespace

int fail(const std::string& message) {
  // Lemonade's own lines ("Error pulling model: ...") keep their words.
  std::cerr << (message.starts_with("Error") ? "" : "Error: ") << message << std::endl;
  return 1;
}

void catch_interrupts() {
  // The self-pipe: a Ctrl-C that lands between a check of interrupted() and
  // a poll() is still seen by that poll (interrupt_fd()).
  if (g_interrupt_pipe[0] < 0 && ::pipe2(g_interrupt_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    g_interrupt_pipe[0] = g_interrupt_pipe[1] = -1;
  }
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocked read returns EINTR
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupted() {
  return g_interrupted.load();
}

int interrupt_fd() {
  return g_interrupt_pipe[0];
}

void clear_interrupt() {
  g_interrupted.store(false);
  char drain[64];
  while (g_interrupt_pipe[0] >= 0 && ::read(g_interrupt_pipe[0], drain, sizeof drain) > 0) {
  }
}

Result<nlohmann::json> get_object_with(const ServerClient& client, const std::string& path,
                                       const std::string& key, nlohmann::json::value_t kind,
                                       const std::string& what) {
  auto reply = client.get(path);
  if (!reply.ok()) {
    return Error(ErrorCode::kNetworkError, "cannot read " + what + ": " + reply.error_text());
  }
  auto j = reply.json();
  if (!j.is_object() || !j.contains(key) || j[key].type() != kind) {
    return Error(ErrorCode::kUpstreamProtocol,
                 "cannot read " + what + ": invalid response from the server");
  }
  return j;
}

Status follow_progress_stream(const ServerClient& client, const std::string& path,
                              const nlohmann::json& body, std::ostream& out, bool terminal) {
  ProgressBoard board(out, terminal);
  SseEvents parser;
  bool complete = false;
  std::optional<Error> failure;
  auto on_event = [&](const SseEvent& e) {
    auto data = nlohmann::json::parse(e.data, nullptr, false);
    if (e.event == "progress" && data.is_object()) {
      board.on_progress(data, ProgressBoard::Clock::now());
    } else if (e.event == "complete") {
      complete = true;
      board.on_complete();
    } else if (e.event == "error") {
      std::string message = "the server reported an error";
      if (data.is_object() && data.contains("error")) {
        const auto& err = data["error"];
        if (err.is_string()) {
          message = err.get<std::string>();
        } else if (err.is_object() && err.value("message", "") != "") {
          message = err["message"].get<std::string>();
        }
      }
      failure = Error(ErrorCode::kNetworkError, message);
    }
  };
  catch_interrupts();
  auto result = client.stream(
      path, body,
      [&](std::string_view bytes) {
        parser.feed(bytes, on_event);
        return true;
      },
      [] { return interrupted(); });
  board.close();
  if (result.aborted) {
    return Error(ErrorCode::kCancelled, "cancelled; run the same command again to resume");
  }
  if (!result.ok()) {
    return Error(ErrorCode::kNetworkError, result.error_text());
  }
  if (failure) {
    return *failure;
  }
  if (!complete) {
    return Error(ErrorCode::kNetworkError,
                 result.transport_error.empty()
                     ? "the server's stream ended before the download completed"
                     : result.transport_error);
  }
  return ok_status();
}

}  // namespace lemon::cli
