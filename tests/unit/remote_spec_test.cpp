// The remote recipe's entries and config.json's remote sections
// (remote/remote_spec.h): what is accepted, and that every refusal names its
// JSON path.
#include <gtest/gtest.h>

#include "lemon/remote/remote_spec.h"

namespace lemon::remote {
namespace {

using nlohmann::json;

Result<RemoteModelSpec> parse(const json& entry) {
  return parse_remote_model("user.far", "Qwen3-8B-GGUF", entry, "user_models.json: 'far'");
}

std::string refusal(const json& entry) {
  auto r = parse(entry);
  EXPECT_FALSE(r.ok());
  return r.ok() ? std::string() : r.error().message();
}

TEST(RemoteSpec, AnEntryWithTwoEndpointsReadsWhole) {
  auto r = parse(json::parse(R"({
    "policy": "least_busy",
    "endpoints": [
      {"base_url": "http://127.0.0.1:8000/api/v1/", "api_key_env": "GPU_BOX_KEY",
       "connect_timeout": 0.5, "request_timeout": 30},
      {"base_url": "https://gpu-box.lan:8443/v1", "api_key_file": "/etc/key",
       "ca_file": "/etc/ca.pem"}]})"));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->name, "user.far");
  EXPECT_EQ(r->checkpoint, "Qwen3-8B-GGUF");
  EXPECT_EQ(r->policy, RemotePolicy::kLeastBusy);
  ASSERT_EQ(r->endpoints.size(), 2u);
  const auto& local = r->endpoints[0];
  EXPECT_EQ(local.base_url, "http://127.0.0.1:8000/api/v1");
  EXPECT_EQ(local.url.scheme, "http");
  EXPECT_EQ(local.url.host, "127.0.0.1");
  EXPECT_EQ(local.url.port, 8000);
  EXPECT_EQ(local.url.path, "/api/v1");
  EXPECT_EQ(local.api_key_env, "GPU_BOX_KEY");
  EXPECT_EQ(local.connect_timeout, std::chrono::milliseconds(500));
  EXPECT_EQ(local.request_timeout, std::chrono::milliseconds(30000));
  const auto& far = r->endpoints[1];
  EXPECT_TRUE(far.url.tls());
  EXPECT_EQ(far.url.port, 8443);
  EXPECT_EQ(far.url.origin(), "https://gpu-box.lan:8443");
  EXPECT_EQ(far.api_key_file, "/etc/key");
  EXPECT_EQ(far.ca_file, "/etc/ca.pem");
}

TEST(RemoteSpec, DefaultsAreFailoverAndTheSchemesPort) {
  auto r = parse(json::parse(R"({"endpoints": [{"base_url": "https://api.example.com"}]})"));
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->policy, RemotePolicy::kFailover);
  EXPECT_EQ(r->endpoints[0].url.port, 443);
  EXPECT_EQ(r->endpoints[0].url.path, "");
  EXPECT_EQ(r->endpoints[0].connect_timeout, std::chrono::milliseconds(2000));
}

TEST(RemoteSpec, PlainHttpToAnotherMachineNeedsToBeAllowed) {
  const std::string why =
      refusal(json::parse(R"({"endpoints": [{"base_url": "http://gpu-box:8000/api/v1"}]})"));
  EXPECT_NE(why.find("user_models.json: 'far'.endpoints[0].base_url"), std::string::npos) << why;
  EXPECT_NE(why.find("allow_insecure_http"), std::string::npos) << why;
  EXPECT_TRUE(parse(json::parse(R"({"endpoints": [{"base_url": "http://gpu-box:8000",
                                                    "allow_insecure_http": true}]})"))
                  .ok());
  EXPECT_TRUE(parse(json::parse(R"({"endpoints": [{"base_url": "http://[::1]:8000"}]})")).ok());
  EXPECT_TRUE(parse(json::parse(R"({"endpoints": [{"base_url": "http://localhost:8000"}]})")).ok());
}

TEST(RemoteSpec, EveryRefusalNamesItsPath) {
  struct Case {
    const char* entry;
    const char* path;
  };
  const Case cases[] = {
      {R"({"endpoints": []})", "'far'.endpoints:"},
      {R"({"policy": "random", "endpoints": [{"base_url": "https://a"}]})", "'far'.policy:"},
      {R"({"endpoints": [{"url": "https://a"}]})", "'far'.endpoints[0].url:"},
      {R"({"endpoints": [{"base_url": "https://a"}, {"base_url": 7}]})",
       "'far'.endpoints[1].base_url:"},
      {R"({"endpoints": [{"base_url": "ftp://a"}]})", "'far'.endpoints[0].base_url:"},
      {R"({"endpoints": [{"base_url": "https://user:pw@a"}]})", "'far'.endpoints[0].base_url:"},
      {R"({"endpoints": [{"base_url": "https://a?x=1"}]})", "'far'.endpoints[0].base_url:"},
      {R"({"endpoints": [{"base_url": "https://a", "connect_timeout": -1}]})",
       "'far'.endpoints[0].connect_timeout:"},
      {R"({"endpoints": [{"base_url": "https://a", "request_timeout": "1m"}]})",
       "'far'.endpoints[0].request_timeout:"},
      {R"({"endpoints": [{"base_url": "https://a", "allow_insecure_http": "yes"}]})",
       "'far'.endpoints[0].allow_insecure_http:"},
      {R"({"endpoints": [{"base_url": "https://a", "api_key_env": "A", "api_key_file": "/k"}]})",
       "'far'.endpoints[0]:"},
      {R"({"endpoints": [{"base_url": "http://127.0.0.1:1", "ca_file": "/ca.pem"}]})",
       "'far'.endpoints[0].ca_file:"},
  };
  for (const auto& c : cases) {
    const std::string why = refusal(json::parse(c.entry));
    EXPECT_NE(why.find(c.path), std::string::npos) << c.entry << " -> " << why;
  }
  auto no_checkpoint = parse_remote_model(
      "user.far", "", json::parse(R"({"endpoints": [{"base_url": "https://a"}]})"),
      "user_models.json: 'far'");
  ASSERT_FALSE(no_checkpoint.ok());
  EXPECT_NE(no_checkpoint.error().message().find("'far'.checkpoint"), std::string::npos);
}

TEST(RemoteSpec, ConfigSectionsReadModelsIntervalsAndDiscovery) {
  auto r = parse_remote_settings(
      json::parse(R"({"models": {"far": {"checkpoint": "Qwen3-8B-GGUF",
                                           "endpoints": [{"base_url": "http://127.0.0.1:9"}]}},
                      "health_interval": 0.2, "discovery_interval": 5})"),
      json::parse(R"([{"base_url": "http://127.0.0.1:8000/api/v1", "key_env": "GPU_BOX_KEY",
                       "prefix": "gpu-box"}])"));
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->models.size(), 1u);
  EXPECT_EQ(r->models[0].name, "user.far");
  EXPECT_EQ(r->model_entries[0]["recipe"], "remote");
  EXPECT_EQ(r->health_interval, std::chrono::milliseconds(200));
  EXPECT_EQ(r->discovery_interval, std::chrono::milliseconds(5000));
  ASSERT_EQ(r->discovery.size(), 1u);
  EXPECT_EQ(r->discovery[0].prefix, "gpu-box");
  EXPECT_EQ(r->discovery[0].endpoint.api_key_env, "GPU_BOX_KEY");
  EXPECT_EQ(r->discovery[0].endpoint.url.path, "/api/v1");
}

TEST(RemoteSpec, ConfigSectionRefusalsNameTheirPath) {
  auto unknown = parse_remote_settings(json::parse(R"({"modles": {}})"), nullptr);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("remote.modles"), std::string::npos);
  auto bad_model = parse_remote_settings(
      json::parse(R"({"models": {"far": {"checkpoint": "x", "endpoints": [{"base_url": 1}]}}})"),
      nullptr);
  ASSERT_FALSE(bad_model.ok());
  EXPECT_NE(bad_model.error().message().find("remote.models.far.endpoints[0].base_url"),
            std::string::npos)
      << bad_model.error().message();
  auto no_prefix =
      parse_remote_settings(nullptr, json::parse(R"([{"base_url": "http://127.0.0.1:1"}])"));
  ASSERT_FALSE(no_prefix.ok());
  EXPECT_NE(no_prefix.error().message().find("remote_discovery[0]"), std::string::npos);
  auto labels =
      parse_remote_settings(json::parse(
                                R"({"models": {"far": {"checkpoint": "x", "labels": "chat",
                                  "endpoints": [{"base_url": "https://a"}]}}})"),
                            nullptr);
  ASSERT_FALSE(labels.ok());
  EXPECT_NE(labels.error().message().find("remote.models.far"), std::string::npos);
  EXPECT_NE(labels.error().message().find("labels"), std::string::npos) << labels.error().message();
  auto interval = parse_remote_settings(json::parse(R"({"health_interval": 0})"), nullptr);
  ASSERT_FALSE(interval.ok());
  EXPECT_NE(interval.error().message().find("remote.health_interval"), std::string::npos);
}

TEST(RemoteSpec, LoopbackHostsAreRecognised) {
  EXPECT_TRUE(is_loopback("127.0.0.1"));
  EXPECT_TRUE(is_loopback("127.1.2.3"));
  EXPECT_TRUE(is_loopback("[::1]"));
  EXPECT_TRUE(is_loopback("localhost"));
  EXPECT_FALSE(is_loopback("gpu-box"));
  EXPECT_FALSE(is_loopback("10.0.0.2"));
  EXPECT_FALSE(is_loopback("[::2]"));
  EXPECT_FALSE(is_loopback("127.example.com"));
}

}  // namespace
}  // namespace lemon::remote
