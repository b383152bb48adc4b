// lemonade-server's command line: Lemonade 9.4.1's subcommands and options
// (cli_parser.cpp with LEMONADE_TRAY), plus ps, load, unload and logs, and
// --json where output is a table. `serve` and `run` take every router option
// (options/command_line.h); the ones given are passed on to the router they
// start.
#include <algorithm>
#include <csignal>
#include <iostream>
#include <map>
#include <set>

#include <CLI/CLI.hpp>

#include "lemon/cli/cli_app.h"
#include "lemon/cli/commands.h"
#include "lemon/options/command_line.h"
#include "lemon/options/router_settings.h"

namespace lemon::cli {
namespace {

// True if `--name` appears among the command-line tokens (as "--name" or
// "--name=value"), i.e. the user gave it rather than the environment.
bool given(const std::vector<std::string>& tokens, const std::string& name) {
  const std::string flag = "--" + name;
  for (const auto& t : tokens) {
    if (t == flag || t.starts_with(flag + "=")) {
      return true;
    }
  }
  return false;
}

// The router options given on the command line, as router arguments.
std::vector<std::string> router_args_of(const CLI::App& sub,
                                        const std::vector<std::string>& tokens) {
  static const std::set<std::string> kNotForRouter = {"no-tray", "save-options", "ready-fd",
                                                      "help"};
  std::vector<std::string> args;
  for (const CLI::Option* opt : sub.get_options()) {
    if (opt->get_lnames().empty()) {
      continue;
    }
    const std::string& name = opt->get_lnames().front();
    // Given under any of its names (--models-dir for --extra-models-dir).
    const auto& names = opt->get_lnames();
    if (kNotForRouter.count(name) != 0 ||
        std::none_of(names.begin(), names.end(),
                     [&tokens](const std::string& n) { return given(tokens, n); })) {
      continue;
    }
    if (opt->get_type_size() == 0) {  // a flag
      args.push_back("--" + name);
    } else if (opt->results().size() == 1) {
      args.push_back("--" + name + "=" + opt->results().front());
    } else {
      args.push_back("--" + name);
      args.insert(args.end(), opt->results().begin(), opt->results().end());
    }
  }
  return args;
}

// The load options given on the command line, as /load's fields.
nlohmann::json load_options_of(const CLI::App& sub, const std::vector<std::string>& tokens) {
  nlohmann::json out = nlohmann::json::object();
  for (const Setting& s : router_settings()) {
    if (s.load_option.empty()) {
      continue;
    }
    const CLI::Option* opt = sub.get_option_no_throw(s.flag);
    if (opt == nullptr || !given(tokens, s.flag.substr(2)) || opt->results().empty()) {
      continue;
    }
    const std::string& raw = opt->results().front();
    nlohmann::json number = nlohmann::json::parse(raw, nullptr, false);
    const bool numeric = s.shape == SettingShape::kInteger || s.shape == SettingShape::kNumber ||
                         s.load_option == "ctx_size";  // a number, or "auto"
    out[s.load_option] = numeric && number.is_number() ? number : nlohmann::json(raw);
  }
  return out;
}

}  // namespace

int run_cli(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app("lemonade-server - Lemonade Server: the command line of lemonade-router",
               "lemonade-server");
  app.set_version_flag("-v,--version", std::string("lemonade-server version ") +
                                           LEMON_ROUTER_VERSION + " (Lemonade API " +
                                           LEMON_API_VERSION + ")");
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Print help for all commands");

  CommandLine cl;
  SettingValues serve_values;
  SettingValues run_values;
  SettingValues load_values;
  bool no_tray = false;

  CLI::App* serve = app.add_subcommand("serve", "Start the server in this terminal");
  add_setting_options(*serve, serve_values);
  serve->add_flag("--no-tray", no_tray, "Accepted for compatibility (there is no tray on Linux)");

  CLI::App* run = app.add_subcommand(
      "run", "Start the server if needed, pull and load a model, and chat with it");
  run->add_option("model", cl.model, "The model to run")->required();
  add_setting_options(*run, run_values);
  run->add_flag("--no-tray", no_tray, "Accepted for compatibility");
  run->add_flag("--save-options", cl.save_options,
                "Save the load options as this model's defaults");

  CLI::App* list = app.add_subcommand("list", "List available models");
  list->add_flag("--json", cl.json, "Machine-readable output");

  CLI::App* pull = app.add_subcommand("pull", "Download a model");
  pull->add_option("model", cl.model, "The model to download: a name or a JSON file")
      ->type_name("MODEL")
      ->required();
  pull->add_option("--checkpoint", cl.checkpoint,
                   "Hugging Face checkpoint (org/model:variant), or an absolute local path "
                   "whose files are copied into the Hugging Face cache and registered")
      ->type_name("CHECKPOINT");
  pull->add_option("--recipe", cl.recipe, "Inference recipe (required with a local path)")
      ->type_name("RECIPE")
      ->check(CLI::IsMember({"llamacpp", "flm", "ryzenai-llm", "whispercpp", "sd-cpp"}));
  pull->add_flag("--reasoning", cl.reasoning, "Mark the model as a reasoning model");
  pull->add_flag("--vision", cl.vision, "Mark the model as a vision model");
  pull->add_flag("--embedding", cl.embedding, "Mark the model as an embedding model");
  pull->add_flag("--reranking", cl.reranking, "Mark the model as a reranking model");
  pull->add_option("--mmproj", cl.mmproj, "Multimodal projector file of a GGUF vision model")
      ->type_name("FILENAME");
  pull->footer(
      "Examples:\n"
      "  lemonade-server pull Qwen3-0.6B-GGUF\n"
      "  lemonade-server pull user.MyLlama --checkpoint "
      "meta-llama/Llama-3.2-1B-Instruct-GGUF:Q4_K_M --recipe llamacpp\n"
      "  lemonade-server pull user.MyModel --checkpoint /home/user/models/my-model --recipe "
      "llamacpp");

  CLI::App* del = app.add_subcommand("delete", "Delete a model");
  del->add_option("model", cl.model, "The model to delete")->required();

  CLI::App* status = app.add_subcommand("status", "Check server status");
  status->add_flag("--json", cl.json, "Machine-readable output");

  app.add_subcommand("stop", "Stop the server");

  CLI::App* recipes = app.add_subcommand("recipes", "List and manage execution backends");
  recipes->add_option("--install", cl.install,
                      "Install or update a backend (format: recipe:backend)");
  recipes->add_option("--uninstall", cl.uninstall, "Uninstall a backend (format: recipe:backend)");
  recipes->add_flag("--json", cl.json, "Machine-readable output");

  CLI::App* ps = app.add_subcommand("ps", "Show the loaded models");
  ps->add_flag("--json", cl.json, "Machine-readable output");

  CLI::App* load = app.add_subcommand("load", "Load a model");
  load->add_option("model", cl.model, "The model to load")->required();
  add_setting_options(*load, load_values, SettingOptions::kLoadOptions);
  load->add_flag("--save-options", cl.save_options,
                 "Save the load options as this model's defaults");
  load->add_flag("--pinned", cl.pinned,
                 "Pin the model: never evicted to make room for another, only unloaded");
  load->add_option("--priority", cl.priority,
                   "Its priority (-1000 to 1000, default 0): a load evicts only models of an "
                   "equal or lower one");  // the server checks the range

  CLI::App* pin = app.add_subcommand("pin", "Pin a loaded model (never evicted)");
  pin->add_option("model", cl.model, "The loaded model to pin")->required();
  CLI::App* unpin = app.add_subcommand("unpin", "Unpin a loaded model");
  unpin->add_option("model", cl.model, "The loaded model to unpin")->required();

  CLI::App* unload = app.add_subcommand("unload", "Unload one model, or every model");
  unload->add_option("model", cl.model, "The model to unload (default: all)");

  CLI::App* config = app.add_subcommand("config", "Show or change the server's settings");
  config->require_subcommand(1);
  CLI::App* config_get =
      config->add_subcommand("get", "Every setting with its source, or one setting's value");
  config_get->add_option("key", cl.model, "A setting (docs/configuration.md)");
  config_get->add_flag("--json", cl.json, "Machine-readable output");
  CLI::App* config_set =
      config->add_subcommand("set", "Change a setting in config.json (JSON or text value)");
  config_set->add_option("key", cl.model, "A setting, e.g. keep_alive or llamacpp.args")
      ->required();
  config_set->add_option("value", cl.config_value, "Its value")->required();
  config->add_subcommand("path", "Print config.json's path");
  CLI::App* add_key = config->add_subcommand(
      "add-key", "Make an API key, store its SHA-256 in config.json, print it once");
  add_key->add_option("name", cl.model, "The key's name (in metrics and the audit log)")
      ->required();
  add_key->add_option("--scopes", cl.key_scopes, "inference, read and/or admin (comma-separated)")
      ->required()
      ->delimiter(',');
  add_key
      ->add_option("--models", cl.key_models, "Model names or globs it may use (comma-separated)")
      ->delimiter(',');
  add_key->add_option("--max-concurrent", cl.key_max_concurrent, "Requests it may have at once")
      ->check(CLI::PositiveNumber);
  add_key
      ->add_option("--requests-per-minute", cl.key_requests_per_minute,
                   "Requests it may make a minute")
      ->check(CLI::PositiveNumber);

  CLI::App* logs = app.add_subcommand("logs", "Print the server's log");
  logs->add_flag("-f,--follow", cl.follow, "Keep printing new lines");

  if (argc <= 1) {
    std::cout << app.help();
    return 0;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help, the version, or the error and usage hint
    return code == 0 ? 0 : 2;
  }

  std::vector<std::string> tokens(argv + 1, argv + argc);
  CliContext ctx = CliContext::from_environment();
  CLI::App* chosen = app.get_subcommands().front();
  cl.command = chosen->get_name();
  if (chosen == config) {
    cl.config_action = config->get_subcommands().front()->get_name();
  }
  if (chosen == serve || chosen == run) {
    const SettingValues& v = chosen == serve ? serve_values : run_values;
    ctx.router_args = router_args_of(*chosen, tokens);
    ctx.host = v.text("host");
    ctx.port = v.integer("port");
    if (!v.text("api_key").empty()) {
      ctx.api_key = v.text("api_key");
    }
  }
  if (chosen == run || chosen == load) {
    cl.load_options = load_options_of(*chosen, tokens);
  }

  using Command = int (*)(const CommandLine&, CliContext&);
  static const std::map<std::string, Command> kCommands = {
      {"serve", cmd_serve}, {"run", cmd_run},         {"list", cmd_list},
      {"pull", cmd_pull},   {"delete", cmd_delete},   {"status", cmd_status},
      {"stop", cmd_stop},   {"recipes", cmd_recipes}, {"ps", cmd_ps},
      {"load", cmd_load},   {"unload", cmd_unload},   {"logs", cmd_logs},
      {"pin", cmd_pin},     {"unpin", cmd_unpin},     {"config", cmd_config}};
  return kCommands.at(cl.command)(cl, ctx);
}

}  // namespace lemon::cli
