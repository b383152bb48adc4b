// The verbs of `lemonade`, Lemonade 11's client (docs/cli.md): each takes
// the parsed command line and the server it talks to, prints to
// stdout/stderr and returns the exit code: 0 success, 1 failure (one line on
// stderr starting "Error"), 2 a verb this server does not offer.
//
// Thread-safety: run on the main thread, one command per process.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/cli/server_client.h"

namespace lemon::cli {

// Where the requests go, after --host/--port/LEMONADE_HOST and discovery.
struct LemonadeTarget {
  std::string host = "127.0.0.1";
  int port = 13305;
  bool https = false;
  std::string api_key;      // LEMONADE_ADMIN_API_KEY when set, else --api-key
  int beacon_port = 13305;  // where scan listens

  ServerClient client() const { return ServerClient(host, port, api_key, https); }
  // "http://HOST:PORT" as a user would open it.
  std::string url() const;
};

struct LemonadeLine {
  std::string command;
  std::string action;             // alias add|remove|list, config set, backends install|...
  std::vector<std::string> args;  // positionals: models, KEY=VALUE, spec, alias and target
  bool json = false;
  bool downloaded = false;  // list
  bool all = false;         // backends
  bool force = false;       // backends install
  bool dry_run = false;     // cleanup-cache
  bool save_options = false;
  bool pinned = false;
  bool chat_cli = false;  // run: chat here instead of opening the web page
  nlohmann::json load_options = nlohmann::json::object();  // given load flags
  // pull
  std::vector<std::pair<std::string, std::string>> checkpoints;  // --checkpoint TYPE CKPT
  std::string recipe;
  std::vector<std::string> labels;
  std::vector<std::string> components;
  std::string alias;
  // export
  std::string output;
  // chat
  std::string system;
  // scan
  int duration = 30;
  // bench
  std::vector<int> prompt_tokens = {128, 512, 2048};
  int runs = 3;
  int max_tokens = 64;
  // launch
  std::string agent;
  std::string model;
  std::string agent_args;
  std::string provider;
  bool print = false;
};

using LemonadeVerb = int (*)(const LemonadeLine&, const LemonadeTarget&);

int verb_status(const LemonadeLine& line, const LemonadeTarget& target);
int verb_list(const LemonadeLine& line, const LemonadeTarget& target);
int verb_pull(const LemonadeLine& line, const LemonadeTarget& target);
int verb_alias(const LemonadeLine& line, const LemonadeTarget& target);
int verb_import(const LemonadeLine& line, const LemonadeTarget& target);
int verb_export(const LemonadeLine& line, const LemonadeTarget& target);
int verb_delete(const LemonadeLine& line, const LemonadeTarget& target);
int verb_load(const LemonadeLine& line, const LemonadeTarget& target);
int verb_unload(const LemonadeLine& line, const LemonadeTarget& target);
int verb_pin(const LemonadeLine& line, const LemonadeTarget& target);
int verb_unpin(const LemonadeLine& line, const LemonadeTarget& target);
int verb_backends(const LemonadeLine& line, const LemonadeTarget& target);
int verb_config(const LemonadeLine& line, const LemonadeTarget& target);
int verb_logs(const LemonadeLine& line, const LemonadeTarget& target);
int verb_run(const LemonadeLine& line, const LemonadeTarget& target);
int verb_chat(const LemonadeLine& line, const LemonadeTarget& target);
int verb_bench(const LemonadeLine& line, const LemonadeTarget& target);
int verb_scan(const LemonadeLine& line, const LemonadeTarget& target);
int verb_check_updates(const LemonadeLine& line, const LemonadeTarget& target);
int verb_cleanup_cache(const LemonadeLine& line, const LemonadeTarget& target);
int verb_launch(const LemonadeLine& line, const LemonadeTarget& target);
// cloud, telemetry: exit 2, "not offered by this server".
int verb_not_offered(const LemonadeLine& line, const LemonadeTarget& target);

// Shared by the verbs.
// "Error: <why the request failed>" for `what` ("fetching health status")
// on stderr; returns 1. No answer: cannot connect; 401/403: cannot
// authenticate (the key); else the server's message.
int fail_request(const std::string& what, const HttpResult& reply, const LemonadeTarget& target);
// POSTs `body` to `path`: `done` on stdout once the server accepts it, else
// fail_request(`what`). 0 or 1.
int post_and_report(const LemonadeTarget& target, std::string_view path, const nlohmann::json& body,
                    const std::string& what, const std::string& done);
// The model's entry (GET /api/v1/models/{name}); pulls it when it is not
// downloaded (11's "Model 'X' is not downloaded. Pulling..."), then loads
// it with `load_body`'s options. 0 or the exit code of a failure (printed).
int pull_if_needed_and_load(const std::string& model, nlohmann::json load_body,
                            const LemonadeTarget& target);
// Opens `url` in the desktop's browser (xdg-open, from an argv); without a
// display or xdg-open, prints it. Never fails.
void open_in_browser(const std::string& url);

}  // namespace lemon::cli
