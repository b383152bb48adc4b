// run: the server (running, or started for this command), the model pulled
// if it is not on disk and loaded, then a chat. Interactive on a terminal
// (streamed replies, multi-line input between """ lines, /bye, /clear, Ctrl-C
// stops a reply); otherwise standard input is one prompt and the answer goes
// to stdout. Status lines go to stderr so a piped answer stays clean.
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iostream>
#include <memory>

#include "lemon/cli/chat_session.h"
#include "lemon/cli/commands.h"
#include "lemon/core/text.h"

namespace lemon::cli {
namespace {

enum class ReadOutcome { kLine, kEnd, kInterrupted };

// Reads one line from fd 0 (the terminal's line discipline does the editing).
class LineReader {
 public:
  ReadOutcome next(std::string& line) {
    for (;;) {
      if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
        line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return ReadOutcome::kLine;
      }
      // Input or a Ctrl-C, whichever comes first (a Ctrl-C that arrived
      // before this poll is still pending on the interrupt pipe).
      pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {interrupt_fd(), POLLIN, 0}};
      if (::poll(fds, fds[1].fd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR) {
        return ReadOutcome::kEnd;
      }
      if (interrupted()) {
        buffer_.clear();
        return ReadOutcome::kInterrupted;
      }
      if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
        continue;
      }
      char chunk[4096];
      ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        if (!buffer_.empty()) {
          line = std::move(buffer_);
          buffer_.clear();
          return ReadOutcome::kLine;
        }
        return ReadOutcome::kEnd;
      }
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }

 private:
  std::string buffer_;
};

// Standard input, read to its end: the one prompt of piped mode.
std::string read_prompt() {
  std::string prompt;
  LineReader reader;
  for (std::string line; reader.next(line) == ReadOutcome::kLine;) {
    prompt += line + "\n";
  }
  return std::string(trim_whitespace(prompt));
}

int answer_once(ChatSession& chat, const std::string& prompt) {
  auto reply = chat.send(
      prompt,
      [](std::string_view text, bool reasoning) {
        if (!reasoning) {
          std::cout << text << std::flush;
        }
      },
      [] { return interrupted(); });
  if (!reply.ok()) {
    std::cout << std::endl;
    return fail(reply.error().message());
  }
  std::cout << std::endl;
  return 0;
}

void print_help() {
  std::cout << "Available commands:\n"
               "  /clear   Forget the conversation so far\n"
               "  /bye     Exit\n"
               "  /?       This help\n\n"
               "Use \"\"\" to begin and end a multi-line message.\n"
               "Ctrl-C stops a reply; Ctrl-D or /bye exits.\n";
}

int chat_loop(ChatSession& chat, const std::string& model) {
  const bool color = ::isatty(STDOUT_FILENO) == 1;
  LineReader reader;
  std::cout << "Chatting with " << model << ". Type /? for help, /bye to exit." << std::endl;
  for (;;) {
    std::cout << ">>> " << std::flush;
    std::string line;
    ReadOutcome got = reader.next(line);
    if (got == ReadOutcome::kEnd) {
      std::cout << std::endl;
      return 0;
    }
    if (got == ReadOutcome::kInterrupted) {
      clear_interrupt();
      std::cout << "\nUse Ctrl + d or /bye to exit." << std::endl;
      continue;
    }
    std::string text(trim_whitespace(line));
    if (text.starts_with("\"\"\"")) {
      text = text.substr(3);
      bool closed = text.size() >= 3 && text.ends_with("\"\"\"");
      while (!closed) {
        std::cout << "... " << std::flush;
        std::string more;
        ReadOutcome m = reader.next(more);
        if (m != ReadOutcome::kLine) {
          clear_interrupt();
          text.clear();
          std::cout << std::endl;
          break;
        }
        text += "\n" + more;
        closed = trim_whitespace(more).ends_with("\"\"\"");
      }
      auto end = text.rfind("\"\"\"");
      if (end != std::string::npos) {
        text = text.substr(0, end);
      }
      text = std::string(trim_whitespace(text));
    } else if (text == "/bye") {
      return 0;
    } else if (text == "/clear") {
      chat.clear();
      std::cout << "Cleared session context" << std::endl;
      continue;
    } else if (text == "/?" || text == "/help") {
      print_help();
      continue;
    } else if (text.starts_with("/")) {
      std::cout << "Unknown command '" << text << "'. Type /? for help" << std::endl;
      continue;
    }
    if (text.empty()) {
      continue;
    }
    auto reply = chat.send(
        text,
        [color](std::string_view piece, bool reasoning) {
          if (reasoning && color) {
            std::cout << "\x1b[2m" << piece << "\x1b[0m";
          } else {
            std::cout << piece;
          }
          std::cout.flush();
        },
        [] { return interrupted(); });
    if (!reply.ok() && reply.error().code() == ErrorCode::kCancelled) {
      clear_interrupt();
      std::cout << std::endl;
      continue;
    }
    std::cout << "\n" << std::endl;
    if (!reply.ok()) {
      std::cerr << "Error: " << reply.error().message() << std::endl;
    }
  }
}

}  // namespace

Status ensure_model_ready(const ServerClient& client, const CommandLine& cl) {
  // Asked by name, the router finds every form of it (user.X or X, an alias).
  auto model = client.get("/api/v1/models/" + path_segment(cl.model));
  if (model.status == 404) {
    return Error(ErrorCode::kModelNotFound,
                 "model '" + cl.model + "' is not in the catalogue (see: lemonade-server list)");
  }
  if (!model.ok()) {
    return Error(ErrorCode::kNetworkError, "cannot read the model: " + model.error_text());
  }
  const auto entry = nlohmann::json::parse(model.body, nullptr, false);
  if (!entry.is_object() || !entry.value("downloaded", false)) {
    std::cerr << "Pulling model: " << cl.model << std::endl;
    nlohmann::json body = {{"model", cl.model}, {"stream", true}};
    Status pulled = follow_progress_stream(client, "/api/v1/pull", body, std::cerr,
                                           ::isatty(STDERR_FILENO) == 1);
    if (!pulled.ok()) {
      return pulled;
    }
  }
  std::cerr << "Loading model " << cl.model << "..." << std::endl;
  nlohmann::json load = cl.load_options;
  load["model_name"] = cl.model;
  if (cl.save_options) {
    load["save_options"] = true;
  }
  auto loaded = client.post("/api/v1/load", load);
  if (!loaded.ok()) {
    return Error(ErrorCode::kBackendExited, "Failed to load model: " + loaded.error_text());
  }
  std::cerr << "Model loaded successfully!" << std::endl;
  return ok_status();
}

int chat_with(const ServerClient& client, const std::string& model, const std::string& system) {
  const bool interactive = ::isatty(STDIN_FILENO) == 1;
  std::string prompt;
  if (!interactive) {
    prompt = read_prompt();
    if (prompt.empty()) {
      return fail("no prompt on standard input");
    }
  }
  catch_interrupts();
  ChatSession chat(client, model, system);
  return interactive ? chat_loop(chat, model) : answer_once(chat, prompt);
}

int cmd_run(const CommandLine& cl, CliContext& ctx) {
  const bool interactive = ::isatty(STDIN_FILENO) == 1;
  std::string prompt;
  if (!interactive) {
    prompt = read_prompt();  // before anything starts: an empty one is an error at once
    if (prompt.empty()) {
      return fail("no prompt on standard input");
    }
  }
  std::unique_ptr<OwnedServer> owned;
  std::optional<ServerClient> client;
  if (auto running = find_running_server(ctx)) {
    std::cerr << "Lemonade Server is already running. Connecting to it..." << std::endl;
    client.emplace(ctx.host, running->port, ctx.api_key);
  } else {
    auto started = OwnedServer::start(ctx, /*echo=*/false);
    if (!started.ok()) {
      return fail(started.error().message());
    }
    owned = std::move(started).value();
    std::cerr << "Lemonade Server v" << LEMON_ROUTER_VERSION << " started on port " << owned->port()
              << " (log: " << ctx.paths.log_file() << ")" << std::endl;
    client.emplace(owned->client(ctx));
  }
  std::cerr << "Running model: " << cl.model << std::endl;
  catch_interrupts();
  if (Status ready = ensure_model_ready(*client, cl); !ready.ok()) {
    return fail(ready.error().message());
  }
  ChatSession chat(*client, cl.model);
  return interactive ? chat_loop(chat, cl.model) : answer_once(chat, prompt);
}

}  // namespace lemon::cli
