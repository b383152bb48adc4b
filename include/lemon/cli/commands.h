// The lemonade-server subcommands (docs/cli.md). Each takes the parsed
// command line and the context, prints to stdout/stderr and returns the exit
// code: 0 success, 1 failure with one line on stderr.
//
// Thread-safety: run on the main thread, one command per process.
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "lemon/cli/server_connection.h"

namespace lemon::cli {

struct CommandLine {
  std::string command;
  std::string model;
  bool save_options = false;
  bool pinned = false;          // load --pinned
  std::optional<int> priority;  // load --priority
  bool json = false;            // list, status, recipes, ps: machine-readable output
  bool follow = false;          // logs
  nlohmann::json load_options = nlohmann::json::object();  // given load flags, /load's names
  // pull
  std::string checkpoint;
  std::string recipe;
  std::string mmproj;
  bool reasoning = false;
  bool vision = false;
  bool embedding = false;
  bool reranking = false;
  // recipes
  std::string install;
  std::string uninstall;
  // config get [KEY] | set KEY VALUE | path (KEY in `model`)
  std::string config_action;
  std::string config_value;
  // config add-key NAME --scopes ... (NAME in `model`)
  std::vector<std::string> key_scopes;
  std::vector<std::string> key_models;
  int key_max_concurrent = 0;
  int key_requests_per_minute = 0;
};

int cmd_serve(const CommandLine& cl, CliContext& ctx);
int cmd_status(const CommandLine& cl, CliContext& ctx);
int cmd_stop(const CommandLine& cl, CliContext& ctx);
int cmd_logs(const CommandLine& cl, CliContext& ctx);
int cmd_list(const CommandLine& cl, CliContext& ctx);
int cmd_pull(const CommandLine& cl, CliContext& ctx);
int cmd_delete(const CommandLine& cl, CliContext& ctx);
int cmd_load(const CommandLine& cl, CliContext& ctx);
int cmd_unload(const CommandLine& cl, CliContext& ctx);
// pin / unpin MODEL: POST /internal/pin (Lemonade HEAD's CLI).
int cmd_pin(const CommandLine& cl, CliContext& ctx);
int cmd_unpin(const CommandLine& cl, CliContext& ctx);
int cmd_ps(const CommandLine& cl, CliContext& ctx);
int cmd_recipes(const CommandLine& cl, CliContext& ctx);
int cmd_run(const CommandLine& cl, CliContext& ctx);
// config get [KEY], config set KEY VALUE, config path: the
// running server's GET /internal/config and POST /internal/set; `set`
// without a server checks and writes config.json itself.
int cmd_config(const CommandLine& cl, CliContext& ctx);

// Shared by the commands.
// /system-info's `recipes` as 11's table (Recipe, Backend, Status,
// Message/Version, Action); rows in state `unsupported` left out when asked.
void print_backends_table(const nlohmann::json& recipes, bool hide_unsupported);
// The model pulled when it is not on disk and loaded with cl's load
// options; status lines on stderr.
Status ensure_model_ready(const ServerClient& client, const CommandLine& cl);
// A chat with `model`: interactive on a terminal, else standard input is
// one prompt and the answer goes to stdout.
int chat_with(const ServerClient& client, const std::string& model, const std::string& system);
// Prints "Error: <message>" (or a message that starts with "Error" as it
// is) on stderr and returns 1.
int fail(const std::string& message);
// Ctrl-C: installs a SIGINT/SIGTERM handler that sets a flag and makes
// interrupt_fd() readable (so a wait for input never misses a Ctrl-C that
// lands just before it); interrupted() reads the flag, clear_interrupt()
// resets both.
void catch_interrupts();
bool interrupted();
int interrupt_fd();
void clear_interrupt();
// Runs `fn(client)` against the running server or a temporary one (see
// ServerSession); its exit code, or 1 if no server could be had.
template <typename Fn>
int with_session(CliContext& ctx, Fn&& fn) {
  auto session = ServerSession::open(ctx);
  if (!session.ok()) {
    return fail(session.error().message());
  }
  return fn((*session)->client());
}
// GET `path`; the reply when it is a JSON object whose `key` has `kind`
// (array or object), else an error saying "cannot read <what>: ...".
Result<nlohmann::json> get_object_with(const ServerClient& client, const std::string& path,
                                       const std::string& key, nlohmann::json::value_t kind,
                                       const std::string& what);

// Streams POST `path` (pull, install) and shows a ProgressBoard on `out`
// (bars redrawn in place when `terminal`). OK only when the stream ends with
// a `complete` event; Ctrl-C stops it (kCancelled) and a later pull resumes.
Status follow_progress_stream(const ServerClient& client, const std::string& path,
                              const nlohmann::json& body, std::ostream& out, bool terminal);

}  // namespace lemon::cli
