// `lemonade launch AGENT`: how a coding agent is pointed at this router
// (Lemonade 11's agent_launcher.cpp at v11.7.0 gives the agents and most
// settings; Ollama's `ollama launch` does the same). Everything goes
// through the agent's environment and arguments; no file of the user's is
// read or written:
//   claude    Anthropic Messages API: ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN
//             and the model for every tier (ANTHROPIC_DEFAULT_*_MODEL);
//   codex     OpenAI Responses API: `-c model_providers.lemonade={...}` and
//             `-c model_provider=lemonade` (with --provider, codex's own
//             provider of that name instead), OPENAI_API_KEY, `-m MODEL`;
//   opencode  OPENCODE_CONFIG_CONTENT (opencode's inline config, over its
//             files) with a "Lemonade" provider, `-m Lemonade/MODEL`;
//   pi        pi reads providers only from models.json in its agent folder:
//             PI_CODING_AGENT_DIR names a folder of lemonade's own (written
//             there, never ~/.pi/agent), `--provider Lemonade --model MODEL`.
// Every agent also gets LEMONADE_API_KEY. The key is the one in effect
// (LEMONADE_ADMIN_API_KEY, --api-key), else "lemonade" (agents insist on
// one; a router without keys ignores it).
//
// Thread-safety: pure functions, except write_pi_agent_dir (a file).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lemon/core/error.h"

namespace lemon::cli {

struct AgentPlan {
  std::string program;                     // "claude", found on PATH at launch
  std::vector<std::string> args;           // argv[1..]
  std::map<std::string, std::string> env;  // added to the inherited environment
  std::string pi_models_json;              // pi: models.json for PI_CODING_AGENT_DIR
};

struct AgentRequest {
  std::string agent;  // claude, codex, opencode, pi
  std::string model;
  std::string base_url;    // "http://HOST:PORT", no trailing slash
  std::string api_key;     // "" when none
  std::string provider;    // codex --provider; "" for ours
  std::string agent_args;  // shell words appended to the arguments
  std::string pi_dir;      // the folder PI_CODING_AGENT_DIR names (pi)
};

// Splits `text` into words as a POSIX shell would without expansion:
// spaces separate, '...' and "..." quote, backslash escapes. An unclosed
// quote is an error.
Result<std::vector<std::string>> split_shell_words(const std::string& text);

Result<AgentPlan> plan_agent(const AgentRequest& request);

// The program's path: PATH, then ~/.npm-global/bin, /usr/local/bin and
// ~/.local/bin (where the agents' installers put them); "" if none.
std::string find_agent_binary(const std::string& program);

}  // namespace lemon::cli
