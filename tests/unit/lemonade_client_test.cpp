// The pure parts of `lemonade`, Lemonade 11's client: --host/LEMONADE_HOST
// read as 11 reads it, beacon datagrams, the agents' settings and
// --agent-args split as a shell would.
#include <gtest/gtest.h>

#include "lemon/cli/agent_launch.h"
#include "lemon/cli/discovery.h"
#include "lemon/cli/target_url.h"

namespace lemon::cli {
namespace {

Target target_of(const std::string& host, int port = 13305, bool port_given = false) {
  auto t = parse_target(host, port, port_given);
  EXPECT_TRUE(t.ok()) << host;
  return t.ok() ? *t : Target{};
}

TEST(LemonadeTarget, HostsAndUrlsAsLemonade11ReadsThem) {
  EXPECT_EQ(target_of("127.0.0.1").port, 13305);
  EXPECT_EQ(target_of("box:9000").host, "box");
  EXPECT_EQ(target_of("box:9000").port, 9000);
  const Target url = target_of("HTTPS://Box:8443/api/v1?x#y", 1234, true);
  EXPECT_TRUE(url.https);
  EXPECT_EQ(url.host, "Box");
  EXPECT_EQ(url.port, 8443) << "a port in the URL wins over --port";
  EXPECT_EQ(target_of("http://box").port, 80) << "a scheme without a port";
  EXPECT_EQ(target_of("https://box").port, 443);
  EXPECT_EQ(target_of("http://box", 8000, true).port, 8000) << "unless a port was given";
  EXPECT_EQ(target_of("[::1]:8001").host, "::1");
  EXPECT_EQ(target_of("[::1]:8001").port, 8001);
  EXPECT_EQ(target_of("fe80::1").host, "fe80::1") << "an unbracketed v6 literal has no port";
  EXPECT_EQ(target_of("fe80::1").port, 13305);
  for (const char* bad : {"box:0", "box:70000", "box:x", "http://box:", "[::1"}) {
    EXPECT_FALSE(parse_target(bad, 13305, false).ok()) << bad;
  }
}

TEST(LemonadeBeacon, ThePortOfItsUrl) {
  auto b = parse_beacon(
      R"({"service": "lemonade", "hostname": "h", "url": "http://127.0.0.1:8000/api/v1/"})", true);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->port, 8000);
  EXPECT_EQ(b->hostname, "h");
  EXPECT_TRUE(parse_beacon(R"({"url": "http://x:9/"})", false).has_value());
  EXPECT_FALSE(parse_beacon(R"({"url": "http://x:9/"})", true).has_value()) << "scan: all 3";
  for (const char* bad :
       {"", "nope", R"({"url": 5})", R"({"url": "http://x/"})", R"({"url": "http://x:99999/"})"}) {
    EXPECT_FALSE(parse_beacon(bad, false).has_value()) << bad;
  }
}

TEST(AgentLaunch, ShellWords) {
  auto words = split_shell_words(R"( a  'b c' "d \"e\"" f\ g "" )");
  ASSERT_TRUE(words.ok());
  EXPECT_EQ(*words, (std::vector<std::string>{"a", "b c", "d \"e\"", "f g", ""}));
  EXPECT_TRUE(split_shell_words("").ok());
  EXPECT_TRUE(split_shell_words("")->empty());
  EXPECT_FALSE(split_shell_words("'open").ok());
}

TEST(AgentLaunch, EachAgentsSettings) {
  AgentRequest r{.agent = "claude",
                 .model = "m",
                 .base_url = "http://localhost:8000",
                 .api_key = "",
                 .provider = "",
                 .agent_args = "--x",
                 .pi_dir = "/p"};
  auto claude = plan_agent(r);
  ASSERT_TRUE(claude.ok());
  EXPECT_EQ(claude->env.at("ANTHROPIC_BASE_URL"), "http://localhost:8000");
  EXPECT_EQ(claude->env.at("ANTHROPIC_AUTH_TOKEN"), "lemonade") << "a stand-in key";
  EXPECT_EQ(claude->env.at("ANTHROPIC_DEFAULT_HAIKU_MODEL"), "m");
  EXPECT_EQ(claude->args, (std::vector<std::string>{"--x"}));

  r.agent = "codex";
  r.api_key = "k";
  auto codex = plan_agent(r);
  ASSERT_TRUE(codex.ok());
  EXPECT_EQ(codex->env.at("OPENAI_API_KEY"), "k");
  EXPECT_NE(codex->args.at(1).find("base_url='http://localhost:8000/v1'"), std::string::npos);
  EXPECT_EQ(codex->args.at(3), "model_provider=\"lemonade\"");
  r.provider = "mine";
  codex = plan_agent(r);
  EXPECT_EQ(codex->args.at(1), "model_provider=\"mine\"") << "no provider of ours injected";

  r.agent = "pi";
  auto pi = plan_agent(r);
  ASSERT_TRUE(pi.ok());
  EXPECT_EQ(pi->env.at("PI_CODING_AGENT_DIR"), "/p");
  EXPECT_NE(pi->pi_models_json.find("\"baseUrl\": \"http://localhost:8000/v1\""),
            std::string::npos);
  r.agent = "cursor";
  EXPECT_FALSE(plan_agent(r).ok());
}

}  // namespace
}  // namespace lemon::cli
