// Footprints remembered across loads, against the real router and the fake
// llama-server: the housekeeper measures each server (its RSS) and keeps
// the figure per configuration in <cache>/footprints.json; the next load of
// the same configuration is charged that figure with a margin instead of the
// estimate, so more models fit the same budget; /api/v1/models shows it for
// a model that is not loaded; on a GPU, what nvidia-smi says the server's
// process holds there is kept too.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using FootprintTest = RouterTest;
using Json = nlohmann::json;
constexpr std::int64_t kFootprintMiB = std::int64_t{1024} * 1024;

// Whether <cache>/footprints.json has a measurement of `model`.
bool remembered_in_file(const TestEnv& env, const std::string& model) {
  std::ifstream in(env.cache_dir() + "/footprints.json");
  std::stringstream text;
  text << in.rdbuf();
  const Json file = Json::parse(text.str(), nullptr, false);
  if (!file.is_object()) {
    return false;
  }
  for (const auto& e : file.value("footprints", Json::array())) {
    if (e.value("model", "") == model && e["measured"].value("ram", 0) > 0) {
      return true;
    }
  }
  return false;
}

Json models_list_entry(int port, const std::string& id) {
  const HttpReply r = http_get(port, "/api/v1/models");
  const Json body = r.json();
  if (!body.is_object() || !body.contains("data")) {
    ADD_FAILURE() << r.status << " " << r.body;
    return nullptr;
  }
  for (const auto& m : body["data"]) {
    if (m["id"] == id || "user." + m.value("id", std::string()) == id) {  // 11's short id
      return m;
    }
  }
  ADD_FAILURE() << id << " is not in " << body.dump();
  return nullptr;
}

TEST_F(FootprintTest, ARememberedFootprintLetsMoreModelsFit) {
  // Each is estimated at 296 MiB (200 MiB of weights, compute, overhead);
  // the fakes hold a few MiB.
  for (const char* key : {"a", "b"}) {
    std::filesystem::resize_file(env_.add_llm(key), 200 * kFootprintMiB);
  }
  // A first run measures both and keeps what it measured.
  ASSERT_NO_FATAL_FAILURE(start_router(
      {"--max-loaded-models", "4", "--memory-budget", "8G", "--memory-poll-interval", "0.1"}));
  ASSERT_EQ(load(port(), "user.a").status, 200);
  ASSERT_EQ(load(port(), "user.b").status, 200);
  ASSERT_TRUE(eventually(
      [&] { return remembered_in_file(env_, "user.a") && remembered_in_file(env_, "user.b"); }));
  router_.reset();

  // The next run measures nothing (no poll comes): two estimates do not fit
  // 500 MiB, two remembered footprints do.
  ASSERT_NO_FATAL_FAILURE(start_router(
      {"--max-loaded-models", "4", "--memory-budget", "500M", "--memory-poll-interval", "3600"}));
  // Not loaded, a shows what it was measured to hold.
  const Json a = models_list_entry(port(), "user.a");
  ASSERT_TRUE(a.is_object());
  ASSERT_TRUE(a["measured_ram"].is_number_integer()) << a.dump();
  EXPECT_GT(a["measured_ram"].get<std::int64_t>(), 0);
  EXPECT_LT(a["measured_ram"].get<std::int64_t>(), 200 * kFootprintMiB);
  EXPECT_TRUE(a["measured_vram"].is_null());

  ASSERT_EQ(load(port(), "user.a").status, 200);
  ASSERT_EQ(load(port(), "user.b").status, 200);
  const Json h = health(port());
  EXPECT_EQ(loaded_names(h), (Names{"user.a", "user.b"})) << "nothing was evicted";
  const Json memory = (*loaded_entry(h, "user.a"))["memory"];
  const std::int64_t charged = memory["charged"]["ram"].get<std::int64_t>();
  EXPECT_LT(charged, memory["estimate"]["ram"].get<std::int64_t>()) << memory.dump();
  EXPECT_EQ(charged, a["measured_ram"].get<std::int64_t>() + 32 * kFootprintMiB) << memory.dump();
}

TEST_F(FootprintTest, AConfigurationNeverSeenIsChargedItsEstimate) {
  std::filesystem::resize_file(env_.add_llm("a"), 200 * kFootprintMiB);
  ASSERT_NO_FATAL_FAILURE(start_router({"--memory-budget", "8G", "--memory-poll-interval", "0.1"}));
  ASSERT_EQ(load(port(), "user.a").status, 200);
  ASSERT_TRUE(eventually([&] { return remembered_in_file(env_, "user.a"); }));
  // Another context is another configuration.
  ASSERT_EQ(load(port(), "user.a", {{"ctx_size", 8192}}).status, 200);
  const Json memory = (*loaded_entry(health(port()), "user.a"))["memory"];
  EXPECT_EQ(memory["charged"], memory["estimate"]) << memory.dump();
}

// On a GPU, the footprint keeps what nvidia-smi says the server's process
// holds there too, and /api/v1/models shows it once the model is unloaded.
TEST_F(FootprintTest, AGpuServersMemoryIsMeasuredWithNvidiaSmiAndRemembered) {
  const std::string smi = env_.root() + "/nvidia-smi.csv";
  const std::string apps = env_.root() + "/nvidia-smi-apps.csv";
  write_file_atomically(smi, "0, 16000, 0\n");
  std::filesystem::resize_file(env_.add_llm("g"), 200 * kFootprintMiB);
  env_.write_recipe_options({{"user.g", {{"llamacpp_backend", "vulkan"}, {"gpu", 0}}}});
  const std::string gpu_dir =
      std::filesystem::path(fake_bin("nvidia-smi")).parent_path().parent_path() / "gpu";
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--memory-budget", "8G", "--memory-poll-interval", "0.1"},
                   {{"PATH", gpu_dir + ":" + env_.router_env().at("PATH")},
                    {"LEMON_FAKE_NVIDIA_SMI", smi},
                    {"LEMON_FAKE_NVIDIA_SMI_APPS", apps},
                    {"LEMONADE_LLAMACPP_VULKAN_BIN", fake_bin("llama-server")}}));
  pid_t pid = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.g", &pid));
  // nvidia-smi now lists the server's process with 300 MiB on GPU 0, and
  // another program's, which nothing charges.
  write_file_atomically(apps, std::to_string(pid) + ", GPU-fake-0, 300\n1, GPU-fake-0, 999\n");
  ASSERT_TRUE(eventually([&] {
    return models_list_entry(port(), "user.g").value("measured_vram", Json()) ==
           Json(300 * kFootprintMiB);
  })) << models_list_entry(port(), "user.g").dump();
  ASSERT_EQ(http_post(port(), "/api/v1/unload", Json{{"model_name", "user.g"}}).status, 200);
  const Json unloaded = models_list_entry(port(), "user.g");
  EXPECT_EQ(unloaded["measured_vram"], 300 * kFootprintMiB) << unloaded.dump();
  EXPECT_GT(unloaded["measured_ram"].get<std::int64_t>(), 0) << unloaded.dump();
}

}  // namespace
}  // namespace lemon::testing
