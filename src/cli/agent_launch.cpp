#include "lemon/cli/agent_launch.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

namespace lemon::cli {
namespace {

namespace fs = std::filesystem;

bool runnable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

}  // namespace

Result<std::vector<std::string>> split_shell_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == '\'') {
      if (c == '\'') {
        quote = 0;
      } else {
        word += c;
      }
    } else if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < text.size() &&
                 std::string("\"\\$`").find(text[i + 1]) != std::string::npos) {
        word += text[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      word += text[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) {
        words.push_back(word);
        word.clear();
        in_word = false;
      }
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote != 0) {
    return Error(ErrorCode::kInvalidRequest, "--agent-args: unclosed quote");
  }
  if (in_word) {
    words.push_back(word);
  }
  return words;
}

Result<AgentPlan> plan_agent(const AgentRequest& r) {
  const std::string key = r.api_key.empty() ? "lemonade" : r.api_key;
  const std::string v1 = r.base_url + "/v1";
  AgentPlan plan;
  plan.program = r.agent;
  plan.env["LEMONADE_API_KEY"] = key;
  if (r.agent == "claude") {
    plan.env["ANTHROPIC_BASE_URL"] = r.base_url;
    plan.env["ANTHROPIC_AUTH_TOKEN"] = key;
    for (const char* tier : {"ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
                             "ANTHROPIC_DEFAULT_HAIKU_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL"}) {
      plan.env[tier] = r.model;
    }
    plan.env["CLAUDE_CODE_ATTRIBUTION_HEADER"] = "0";
    plan.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1";
  } else if (r.agent == "codex") {
    plan.env["OPENAI_API_KEY"] = key;
    if (r.provider.empty()) {
      plan.args.insert(plan.args.end(),
                       {"-c", "model_providers.lemonade={ name='Lemonade', base_url='" + v1 +
                                  "', wire_api='responses', env_key='OPENAI_API_KEY', "
                                  "requires_openai_auth=false, supports_websockets=false }"});
    }
    const std::string provider = r.provider.empty() ? "lemonade" : r.provider;
    plan.args.insert(plan.args.end(),
                     {"-c", "model_provider=\"" + provider + "\"", "-c",
                      "show_raw_agent_reasoning=true", "-c", "web_search=\"disabled\"", "-c",
                      "analytics.enabled=false", "-c", "feedback.enabled=false", "-m", r.model});
  } else if (r.agent == "opencode") {
    const nlohmann::json config = {{"$schema", "https://opencode.ai/config.json"},
                                   {"provider",
                                    {{"Lemonade",
                                      {{"npm", "@ai-sdk/openai-compatible"},
                                       {"name", "Lemonade (lemonade-router)"},
                                       {"options", {{"baseURL", v1}, {"apiKey", key}}},
                                       {"models", {{r.model, {{"name", r.model}}}}}}}}}};
    plan.env["OPENCODE_CONFIG_CONTENT"] = config.dump();
    plan.args = {"-m", "Lemonade/" + r.model};
  } else if (r.agent == "pi") {
    const nlohmann::json models = {{"providers",
                                    {{"Lemonade",
                                      {{"baseUrl", v1},
                                       {"api", "openai-completions"},
                                       {"apiKey", key},
                                       {"models", nlohmann::json::array({{{"id", r.model}}})}}}}}};
    plan.pi_models_json = models.dump(2) + "\n";
    plan.env["PI_CODING_AGENT_DIR"] = r.pi_dir;
    plan.args = {"--provider", "Lemonade", "--model", r.model};
  } else {
    return Error(ErrorCode::kInvalidRequest, "unknown agent '" + r.agent + "'");
  }
  auto extra = split_shell_words(r.agent_args);
  if (!extra.ok()) {
    return extra.error();
  }
  plan.args.insert(plan.args.end(), extra->begin(), extra->end());
  return plan;
}

std::string find_agent_binary(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && runnable_file(fs::path(dir) / program)) {
      return (fs::path(dir) / program).string();
    }
  }
  const char* home = std::getenv("HOME");
  std::vector<fs::path> fallbacks = {"/usr/local/bin"};
  if (home != nullptr && *home != '\0') {
    fallbacks.insert(fallbacks.begin(), fs::path(home) / ".npm-global/bin");
    fallbacks.push_back(fs::path(home) / ".local/bin");
  }
  for (const fs::path& dir : fallbacks) {
    if (runnable_file(dir / program)) {
      return (dir / program).string();
    }
  }
  return {};
}

}  // namespace lemon::cli
