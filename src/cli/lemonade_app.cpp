// lemonade's command line: 11's global options and verbs (CLI11, options
// accepted before or after the verb), the server found, the verb run.
#include "lemon/cli/lemonade_app.h"

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>

#include <CLI/CLI.hpp>

#include "lemon/cli/discovery.h"
#include "lemon/cli/lemonade_commands.h"
#include "lemon/cli/router_args.h"
#include "lemon/cli/target_url.h"
#include "lemon/options/command_line.h"

namespace lemon::cli {
namespace {

std::string env_text(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

struct Parsed {
  LemonadeLine line;
  std::string host = "127.0.0.1";
  int port = kLemonade11Port;
  std::string api_key;
  bool discovery = true;
};

// Options a verb that loads a model takes (11's load options and ours).
void add_load_options(CLI::App& sub, SettingValues& values, LemonadeLine& line) {
  add_setting_options(sub, values, SettingOptions::kLoadOptions);
  sub.add_flag("--save-options", line.save_options,
               "Save the load options as this model's defaults");
  sub.add_flag("--pinned", line.pinned, "Pin the model: never evicted, only unloaded");
}

}  // namespace

std::string LemonadeTarget::url() const {
  const bool v6 = host.find(':') != std::string::npos;
  const std::string shown = host.empty() || host == "0.0.0.0" ? "127.0.0.1" : host;
  return (https ? "https://" : "http://") + (v6 ? "[" + shown + "]" : shown) + ":" +
         std::to_string(port);
}

int run_lemonade(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  Parsed p;
  LemonadeLine& line = p.line;
  CLI::App app("Lemonade CLI - HTTP client for Lemonade Server (lemonade-router)", "lemonade");
  app.set_version_flag("-v,--version", std::string("lemonade version ") + LEMON_ROUTER_VERSION +
                                           " (lemonade-router; Lemonade API " + LEMON_API_VERSION +
                                           ")");
  app.set_help_all_flag("--help-all", "Print help for all commands");
  app.fallthrough();
  app.add_option("--host", p.host, "Server host, or a URL (http:// or https://)")
      ->envname("LEMONADE_HOST")
      ->capture_default_str();
  app.add_option("--port", p.port, "Server port")
      ->envname("LEMONADE_PORT")
      ->check(CLI::Range(1, 65535))
      ->capture_default_str();
  app.add_option("--api-key", p.api_key, "API key (LEMONADE_ADMIN_API_KEY wins)")
      ->envname("LEMONADE_API_KEY");
  app.add_flag("--discovery,!--no-discovery", p.discovery,
               "Find a local server when --host and --port are not given (default: on)");

  const std::string quick = "Quick start";
  const std::string server = "Server";
  const std::string models = "Model management";
  SettingValues load_values;
  SettingValues run_values;
  SettingValues launch_values;

  CLI::App* run =
      app.add_subcommand("run", "Load a model and open it in the web app")->group(quick);
  run->add_option("model", line.model, "The model");
  add_load_options(*run, run_values, line);
  run->add_flag("--chat-cli", line.chat_cli, "Chat in this terminal instead");

  CLI::App* launch =
      app.add_subcommand("launch", "Start a coding agent (claude, codex, opencode, pi) on a model")
          ->group(quick);
  launch->add_option("agent", line.agent, "claude, codex, opencode or pi")
      ->check(CLI::IsMember({"claude", "codex", "opencode", "pi"}));
  launch->add_option("-m,--model", line.model, "The model the agent uses");
  launch->add_option("--agent-args", line.agent_args, "More arguments for the agent (shell words)");
  launch->add_option("-p,--provider", line.provider,
                     "codex only: a provider of codex's own config.toml instead of ours");
  launch->add_flag("--print", line.print,
                   "Show the agent's command and environment instead of launching it");
  add_setting_options(*launch, launch_values, SettingOptions::kLoadOptions);

  CLI::App* chat = app.add_subcommand("chat", "Chat with a model in this terminal")->group(quick);
  chat->add_option("model", line.model, "The model (default: the loaded one)");
  chat->add_option("--system", line.system, "A system prompt");
  chat->add_flag("--no-stream")->description("Accepted (replies always stream here)");

  CLI::App* backends =
      app.add_subcommand("backends", "List, install or uninstall backends")->group(server);
  backends->alias("recipes");
  backends->add_flag("--all", line.all, "Also show backends this machine cannot run");
  CLI::App* install = backends->add_subcommand("install", "Install a backend (recipe:backend)");
  install->add_option("spec", line.args, "recipe:backend, e.g. llamacpp:vulkan")->required();
  install->add_flag("--force", line.force, "Install again even if installed");
  CLI::App* uninstall = backends->add_subcommand("uninstall", "Uninstall a backend");
  uninstall->add_option("spec", line.args, "recipe:backend")->required();

  CLI::App* status = app.add_subcommand("status", "Check the server's status")->group(server);
  status->add_flag("--json", line.json, "Print {\"port\": N}");
  app.add_subcommand("logs", "Open the server's log in the web app")->group(server);
  CLI::App* scan = app.add_subcommand("scan", "List the servers' beacons heard")->group(server);
  scan->add_option("--duration", line.duration, "Seconds to listen")->check(CLI::Range(1, 3600));
  CLI::App* telemetry =
      app.add_subcommand("telemetry", "Not offered by this server")->group(server);
  telemetry->allow_extras();
  CLI::App* config =
      app.add_subcommand("config", "Show or change the server's settings")->group(server);
  CLI::App* config_set = config->add_subcommand("set", "Set KEY=VALUE (dotted keys nest)");
  config_set->add_option("pairs", line.args, "KEY=VALUE ...")->required();
  CLI::App* cloud = app.add_subcommand("cloud", "Not offered by this server")->group(server);
  cloud->allow_extras();

  CLI::App* list = app.add_subcommand("list", "List models")->group(models);
  list->add_flag("--downloaded", line.downloaded, "Only downloaded models");
  list->add_option("filter", line.args, "Part of a name (* is a wildcard)");
  app.add_subcommand("check-updates", "Downloaded models with a newer upload")->group(models);
  CLI::App* pull = app.add_subcommand("pull", "Download a model")->group(models);
  pull->add_option("model", line.model,
                   "A registered name, owner/repo[:variant], or a new name with --checkpoint")
      ->required();
  pull->add_option("--checkpoint", line.checkpoints, "TYPE CHECKPOINT (main, mmproj, draft...)");
  pull->add_option("--recipe", line.recipe, "The recipe of a new model");
  pull->add_option("--label", line.labels, "A label of a new model (repeatable)");
  pull->add_option("--components", line.components, "A collection's models");
  pull->add_option("--alias", line.alias, "Also name it this alias");
  pull->add_option("--source")
      ->description("huggingface (the only registry here)")
      ->check(CLI::IsMember({"huggingface"}));
  CLI::App* del = app.add_subcommand("delete", "Delete a model's files")->group(models);
  del->add_option("model", line.model, "The model")->required();
  CLI::App* load = app.add_subcommand("load", "Load a model")->group(models);
  load->add_option("model", line.model, "The model")->required();
  add_load_options(*load, load_values, line);
  CLI::App* unload = app.add_subcommand("unload", "Unload a model, or every model")->group(models);
  unload->add_option("model", line.model, "The model (default: all)");
  CLI::App* pin = app.add_subcommand("pin", "Pin a loaded model")->group(models);
  pin->add_option("model", line.model, "The model")->required();
  CLI::App* unpin = app.add_subcommand("unpin", "Unpin a model")->group(models);
  unpin->add_option("model", line.model, "The model")->required();
  CLI::App* import =
      app.add_subcommand("import", "Register and pull a model from a JSON file")->group(models);
  import->add_option("file", line.model, "The recipe's JSON file")->required();
  import->add_flag("--yes,--skip-prompt")->description("Accepted (nothing is asked)");
  CLI::App* exp = app.add_subcommand("export", "Print a model's JSON (for import)")->group(models);
  exp->add_option("model", line.model, "The model")->required();
  exp->add_option("--output", line.output, "Write it to this file");
  CLI::App* cleanup =
      app.add_subcommand("cleanup-cache", "Delete files no model uses")->group(models);
  cleanup->add_flag("--dry-run", line.dry_run, "Only list them");
  CLI::App* alias = app.add_subcommand("alias", "Model aliases (list by default)")->group(models);
  CLI::App* alias_add = alias->add_subcommand("add", "ALIAS TARGET");
  alias_add->add_option("names", line.args, "ALIAS TARGET")->required()->expected(2);
  CLI::App* alias_remove = alias->add_subcommand("remove", "ALIAS");
  alias_remove->add_option("alias", line.args, "ALIAS")->required()->expected(1);
  alias->add_subcommand("list", "List the aliases");
  alias->require_subcommand(0, 1);

  CLI::App* bench =
      app.add_subcommand("bench", "Chat completion speed across prompt sizes")->group(quick);
  bench->add_option("models", line.args, "Models to measure")->required();
  bench->add_option("--prompt-tokens", line.prompt_tokens,
                    "Prompt sizes in tokens (default 128 512 2048)");
  bench->add_option("--runs", line.runs, "Runs per size")->check(CLI::Range(1, 100));
  bench->add_option("--max-tokens", line.max_tokens, "Tokens generated per run")
      ->check(CLI::Range(1, 4096));
  bench->add_flag("--json", line.json, "Machine-readable output");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (app.get_subcommands().empty()) {
    std::cerr << "Error: No command specified\n" << app.help();
    return 1;
  }
  CLI::App* chosen = app.get_subcommands().front();
  line.command = chosen->get_name();
  if (!chosen->get_subcommands().empty()) {
    line.action = chosen->get_subcommands().front()->get_name();
  }
  const std::vector<std::string> tokens(argv + 1, argv + argc);
  if (chosen == load || chosen == run || chosen == launch) {
    line.load_options = load_options_of(*chosen, tokens);
  }
  if (!line.provider.empty() && line.agent != "codex") {
    std::cerr << "Error: --provider is only supported for 'lemonade launch codex'." << std::endl;
    return 1;
  }

  const bool host_given =
      app.get_option("--host")->count() > 0 || !env_text("LEMONADE_HOST").empty();
  const bool port_given =
      app.get_option("--port")->count() > 0 || !env_text("LEMONADE_PORT").empty();
  auto target_of = parse_target(p.host, p.port, port_given);
  if (!target_of.ok()) {
    std::cerr << "Error: " << target_of.error().message() << std::endl;
    return 2;
  }
  LemonadeTarget target;
  target.host = target_of->host;
  target.port = target_of->port;
  target.https = target_of->https;
  target.api_key = p.api_key;
  const std::string beacon_env = env_text("LEMONADE_BEACON_PORT");
  if (!beacon_env.empty()) {
    target.beacon_port = std::atoi(beacon_env.c_str());
  }
  if (p.discovery && !host_given && !port_given && chosen != scan && chosen != cloud &&
      chosen != telemetry) {
    DiscoveryPlan plan;
    plan.beacon_port = target.beacon_port;
    plan.probe_ports = beacon_env.empty() ? std::vector<int>{kLemonade11Port, 8000}
                                          : std::vector<int>{target.beacon_port};
    plan.api_key = target.api_key;
    if (auto found = discover_router_port(plan)) {
      target.port = *found;
    }
  }
  if (const std::string admin = env_text("LEMONADE_ADMIN_API_KEY"); !admin.empty()) {
    target.api_key = admin;
  }

  static const std::map<std::string, LemonadeVerb> kVerbs = {
      {"status", verb_status},
      {"list", verb_list},
      {"pull", verb_pull},
      {"alias", verb_alias},
      {"import", verb_import},
      {"export", verb_export},
      {"delete", verb_delete},
      {"load", verb_load},
      {"unload", verb_unload},
      {"pin", verb_pin},
      {"unpin", verb_unpin},
      {"backends", verb_backends},
      {"config", verb_config},
      {"logs", verb_logs},
      {"run", verb_run},
      {"chat", verb_chat},
      {"bench", verb_bench},
      {"scan", verb_scan},
      {"check-updates", verb_check_updates},
      {"cleanup-cache", verb_cleanup_cache},
      {"launch", verb_launch},
      {"cloud", verb_not_offered},
      {"telemetry", verb_not_offered},
  };
  return kVerbs.at(line.command)(line, target);
}

}  // namespace lemon::cli
