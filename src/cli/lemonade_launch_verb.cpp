// lemonade launch AGENT: the model chosen (asked on a terminal, coding
// models first), loaded or queued for loading, then the agent run in this
// process's place (exec, argv, no shell) with the settings of
// agent_launch.h; its exit code is lemonade's.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "lemon/cli/agent_launch.h"
#include "lemon/cli/commands.h"
#include "lemon/cli/lemonade_commands.h"
#include "lemon/core/atomic_file.h"
#include "lemon/options/config_file.h"

namespace lemon::cli {
namespace {

bool has_label(const nlohmann::json& model, const std::string& label) {
  const auto labels = model.value("labels", nlohmann::json::array());
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

// Downloaded chat models, those labelled coding first.
std::vector<std::string> agent_candidates(const LemonadeTarget& target) {
  std::vector<std::string> coding;
  std::vector<std::string> others;
  const nlohmann::json answer = target.client().get("/api/v1/models?show_all=false").json();
  for (const auto& m : answer.value("data", nlohmann::json::array())) {
    if (!m.value("downloaded", false) || has_label(m, "embeddings") || has_label(m, "reranking") ||
        has_label(m, "audio") || has_label(m, "image")) {
      continue;
    }
    (has_label(m, "coding") ? coding : others).push_back(m.value("id", ""));
  }
  coding.insert(coding.end(), others.begin(), others.end());
  return coding;
}

Result<std::string> choose_model(const LemonadeTarget& target) {
  const std::vector<std::string> names = agent_candidates(target);
  std::string list;
  for (const auto& n : names) {
    list += (list.empty() ? "" : ", ") + n;
  }
  if (::isatty(STDIN_FILENO) != 1) {
    return Error(ErrorCode::kInvalidRequest,
                 names.empty() ? std::string("name a model with --model (no model is downloaded; "
                                             "lemonade pull MODEL)")
                               : "name a model with --model: " + list);
  }
  if (names.empty()) {
    return Error(ErrorCode::kInvalidRequest, "no model is downloaded: lemonade pull MODEL first");
  }
  std::cout << "Select a model:\n";
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::cout << "  " << i + 1 << ") " << names[i] << "\n";
  }
  std::cout << "Enter number: " << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer) || answer.empty() ||
      answer.find_first_not_of("0123456789") != std::string::npos) {
    return Error(ErrorCode::kInvalidRequest, "Invalid selection.");
  }
  const unsigned long n = std::stoul(answer);
  if (n < 1 || n > names.size()) {
    return Error(ErrorCode::kInvalidRequest, "Selection out of range.");
  }
  return names[n - 1];
}

std::string agent_base_url(const LemonadeTarget& target) {
  std::string host = target.host;
  if (host.empty() || host == "0.0.0.0" || host == "::" || host == "*") {
    host = "localhost";
  } else if (host.find(':') != std::string::npos) {
    host = "[" + host + "]";
  }
  return (target.https ? "https://" : "http://") + host + ":" + std::to_string(target.port);
}

}  // namespace

int verb_launch(const LemonadeLine& line, const LemonadeTarget& target) {
  if (line.agent.empty()) {
    return fail("name the agent: lemonade launch claude|codex|opencode|pi");
  }
  std::string model = line.model;
  if (model.empty()) {
    auto chosen = choose_model(target);
    if (!chosen.ok()) {
      return fail(chosen.error().message());
    }
    model = *chosen;
  }
  AgentRequest request{.agent = line.agent,
                       .model = model,
                       .base_url = agent_base_url(target),
                       .api_key = target.api_key,
                       .provider = line.provider,
                       .agent_args = line.agent_args,
                       .pi_dir = (lemonade_cache_dir() / "agents" / "pi").string()};
  auto plan = plan_agent(request);
  if (!plan.ok()) {
    return fail(plan.error().message());
  }
  if (line.print) {
    std::cout << "# " << line.agent << " on " << model << " at " << request.base_url << "\n";
    for (const auto& [name, value] : plan->env) {
      std::cout << name << "=" << value << "\n";
    }
    std::cout << plan->program;
    for (const auto& a : plan->args) {
      std::cout << " " << a;
    }
    std::cout << std::endl;
    if (!plan->pi_models_json.empty()) {
      std::cout << "# and " << request.pi_dir << "/models.json:\n" << plan->pi_models_json;
    }
    return 0;
  }
  const std::string binary = find_agent_binary(plan->program);
  if (binary.empty()) {
    return fail(line.agent + " was not found on PATH (nor in ~/.npm-global/bin, /usr/local/bin, " +
                "~/.local/bin); install it first");
  }
  if (!plan->pi_models_json.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(request.pi_dir, ec);
    const std::string file = request.pi_dir + "/models.json";
    if (Status written = write_file_atomically(file, plan->pi_models_json); !written.ok()) {
      return fail(written.error().message());
    }
    std::cout << "pi's Lemonade provider written to " << file
              << " (PI_CODING_AGENT_DIR; ~/.pi/agent is untouched)" << std::endl;
  }
  std::cout << (target.api_key.empty()
                    ? "Launch auth: no API key provided; using default agent auth token."
                    : "Launch auth: API key provided and propagated to the launched agent.")
            << std::endl;
  if (!line.load_options.empty()) {
    nlohmann::json body = line.load_options;
    body["save_options"] = false;
    if (int code = pull_if_needed_and_load(model, body, target); code != 0) {
      return code;
    }
  } else {
    // Queued, not awaited: the agent starts while the model loads.
    std::cout << "Loading model in background: " << model << std::endl;
    (void)target.client().post("/models/load", {{"model", model}}, std::chrono::seconds(30));
  }
  std::cout << "Launching " << line.agent << "..." << std::endl;
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (!plan->env.contains(entry.substr(0, entry.find('=')))) {
      env_text.push_back(entry);
    }
  }
  for (const auto& [name, value] : plan->env) {
    env_text.push_back(name);
    env_text.back().append("=").append(value);
  }
  std::vector<std::string> args = {binary};
  args.insert(args.end(), plan->args.begin(), plan->args.end());
  std::vector<char*> argv;
  std::vector<char*> envp;
  argv.reserve(args.size() + 1);
  envp.reserve(env_text.size() + 1);
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  for (auto& e : env_text) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  ::execve(binary.c_str(), argv.data(), envp.data());
  return fail("cannot run " + binary + ": " + std::strerror(errno));
}

}  // namespace lemon::cli
