// Memory-aware admission against the real router and fakes (issue #13 §1):
// a load evicts least recently used servers until it fits the budget of the
// device it runs on; a model too big even alone gets 507 and unloads nothing;
// when another program takes a GPU's memory, idle models there are unloaded.
// Model sizes come from sparse files (the estimate of a file that is not a
// GGUF is its size); a GPU comes from the fake nvidia-smi (fakes/gpu), whose
// answer the test rewrites.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/prometheus_text.h"
#include "support/router_events.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

using MemoryTest = RouterTest;
using Json = nlohmann::json;
constexpr std::uintmax_t MiB = std::uintmax_t{1024} * 1024;

// A user llamacpp model whose file has `mib` MiB (sparse: no disk is used).
void add_sized_llm(TestEnv& env, const std::string& key, std::uintmax_t mib) {
  const std::string path = env.add_llm(key);
  std::filesystem::resize_file(path, mib * MiB);
}

std::string fake_gpu_dir() {
  return std::filesystem::path(fake_bin("nvidia-smi")).parent_path().parent_path() / "gpu";
}

// The router's environment for a machine with one NVIDIA GPU that the fake
// nvidia-smi describes from `smi_file`, and llama.cpp's Vulkan build faked.
std::map<std::string, std::string> gpu_env(const TestEnv& env, const std::string& smi_file) {
  return {{"PATH", fake_gpu_dir() + ":" + env.router_env().at("PATH")},
          {"LEMON_FAKE_NVIDIA_SMI", smi_file},
          {"LEMONADE_LLAMACPP_VULKAN_BIN", fake_bin("llama-server")}};
}

Json device_entry(const Json& health, const std::string& device) {
  for (const auto& d : health.value("devices", Json::array())) {
    if (d["device"] == device) {
      return d;
    }
  }
  return nullptr;
}

TEST_F(MemoryTest, ALoadEvictsTheLeastRecentlyUsedUntilItFitsTheBudget) {
  // Each model: 200 MiB of weights, plus compute and process overhead.
  for (const char* key : {"a", "b", "c"}) {
    add_sized_llm(env_, key, 200);
  }
  ASSERT_NO_FATAL_FAILURE(start_router(
      {"--max-loaded-models", "8", "--memory-budget", "700M", "--memory-poll-interval", "3600"}));
  RouterEvents events(port());
  ASSERT_EQ(load(port(), "user.a").status, 200);
  ASSERT_EQ(load(port(), "user.b").status, 200);
  ASSERT_EQ(chat(port(), "user.a").status, 200);  // b is now the least recently used
  Json before = health(port());
  EXPECT_EQ(loaded_names(before), (Names{"user.a", "user.b"}));
  const Json estimate = (*loaded_entry(before, "user.a"))["memory"]["estimate"];
  ASSERT_TRUE(estimate.contains("ram")) << estimate.dump();
  EXPECT_GE(estimate["ram"].get<std::int64_t>(), static_cast<std::int64_t>(200 * MiB));
  Json ram = device_entry(before, "ram");
  ASSERT_TRUE(ram.is_object()) << before.dump();
  EXPECT_EQ(ram["budget"], 700 * MiB);
  EXPECT_EQ(ram["used_by_router"],
            estimate["ram"].get<std::int64_t>() +
                (*loaded_entry(before, "user.b"))["memory"]["estimate"]["ram"].get<std::int64_t>());

  // /metrics says the same.
  HttpReply scrape = http_get(port(), "/metrics");
  ASSERT_EQ(scrape.status, 200);
  std::string problem;
  auto metrics = parse_prom_text(scrape.body, &problem);
  ASSERT_TRUE(metrics.has_value()) << problem;
  EXPECT_EQ(metrics->value("lemonade_device_memory_budget_bytes", {{"device", "ram"}}),
            static_cast<double>(700 * MiB));
  EXPECT_EQ(metrics->value("lemonade_model_memory_estimate_bytes",
                           {{"model", "user.a"}, {"device", "ram"}}),
            estimate["ram"].get<double>());

  // Three do not fit in 700 MiB, though the slot limit allows them.
  ASSERT_EQ(load(port(), "user.c").status, 200);
  auto planned = events.next("eviction_planned", "user.b");
  ASSERT_TRUE(planned.has_value());
  EXPECT_EQ((*planned)["reason"], "memory");
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.a", "user.c"}));
  EXPECT_EQ(events.count("eviction_planned", "user.a"), 0);
}

TEST_F(MemoryTest, AModelTooBigForTheBudgetGets507AndUnloadsNothing) {
  add_sized_llm(env_, "small", 10);
  add_sized_llm(env_, "huge", 400);
  ASSERT_NO_FATAL_FAILURE(start_router(
      {"--max-loaded-models", "8", "--memory-budget", "300M", "--memory-poll-interval", "3600"}));
  ASSERT_EQ(load(port(), "user.small").status, 200);
  for (bool explicit_load : {true, false}) {
    HttpReply r = explicit_load ? load(port(), "user.huge") : chat(port(), "user.huge");
    EXPECT_EQ(r.status, 507) << r.body;
    Json body = Json::parse(r.body, nullptr, false);
    ASSERT_TRUE(is_error_envelope(body)) << r.body;
    EXPECT_EQ(body["error"]["code"], "insufficient_memory");
    const std::string message = body["error"]["message"];
    EXPECT_NE(message.find("user.huge"), std::string::npos) << message;
    EXPECT_NE(message.find("300 MiB"), std::string::npos) << "names the budget: " << message;
  }
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.small"})) << "nothing was unloaded";
}

// The fake nvidia-smi's line for a 1000 MiB GPU0 of which `used` bytes are
// taken (rounded up to MiB, as nvidia-smi reports whole MiB).
std::string smi_line(std::int64_t used) {
  return "0, 1000, " + std::to_string((used + static_cast<std::int64_t>(MiB) - 1) / MiB) + "\n";
}

std::int64_t gpu0_estimate(const Json& health, const std::string& model) {
  auto entry = loaded_entry(health, model);
  return entry ? (*entry)["memory"]["estimate"].value("gpu0", std::int64_t{0}) : 0;
}

// A load placed on the CPU reads system RAM only: nvidia-smi runs at start
// and for the memory poller, never for it (issue #27 §1); a load on a GPU
// reads its GPU afresh.
TEST_F(MemoryTest, ALoadOnTheCpuNeverRunsNvidiaSmi) {
  const std::string smi = env_.root() + "/nvidia-smi.csv";
  const std::string calls = env_.root() + "/nvidia-smi.calls";
  write_file_atomically(smi, smi_line(0));
  add_sized_llm(env_, "a", 10);
  add_sized_llm(env_, "b", 10);
  add_sized_llm(env_, "g", 10);
  env_.write_recipe_options({{"user.g", {{"llamacpp_backend", "vulkan"}, {"gpu", 0}}}});
  auto env = gpu_env(env_, smi);
  env["LEMON_FAKE_NVIDIA_SMI_CALLS"] = calls;
  ASSERT_NO_FATAL_FAILURE(
      start_router({"--max-loaded-models", "1", "--memory-poll-interval", "3600"}, env));
  auto runs = [&] {
    std::ifstream in(calls);
    return static_cast<int>(
        std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
  };
  // The device table /health shows comes from the reading at start.
  ASSERT_TRUE(eventually([&] { return device_entry(health(port()), "gpu0").is_object(); }));
  const int at_start = runs();
  EXPECT_GE(at_start, 1);
  for (const char* model : {"user.a", "user.b", "user.a", "user.b"}) {
    ASSERT_EQ(load(port(), model).status, 200) << model;  // each one a switch
  }
  EXPECT_EQ(runs(), at_start) << "a load on the CPU ran nvidia-smi";
  ASSERT_EQ(load(port(), "user.g").status, 200);
  EXPECT_EQ(runs(), at_start + 1) << "a load on the GPU reads it afresh";
}

// Issue #27 §1: a switch between CPU models that both fit the budget starts
// the new backend while the old one stops (here an old one that takes its
// whole --stop-grace), so the switching request does not wait for it; on a
// GPU the old process must be gone first, since only then is its memory
// free.
TEST_F(MemoryTest, ASwitchOnTheCpuStartsTheNewBackendWhileTheOldOneStops) {
  // The old backend ignores SIGTERM (and speaks no child mode, whose exit
  // command would stop it) and its grace outlasts the test: a switch that
  // waited for it to stop would never be served.
  env_.write_sidecar(env_.add_llm("slow"), {{"ignore_sigterm", true}, {"child_mode", false}});
  env_.add_llm("b");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "1", "--stop-grace", "600"}));
  pid_t old_pid = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.slow", &old_pid));
  PidWatch old_backend(old_pid);
  ASSERT_EQ(chat(port(), "user.b").status, 200);
  EXPECT_FALSE(old_backend.exited());
  EXPECT_TRUE(eventually([&] { return loaded_names(health(port())) == Names{"user.b"}; }))
      << "the old one is still served";
}

TEST_F(MemoryTest, ASwitchOnAGpuWaitsForTheOldBackendToStop) {
  const std::string smi = env_.root() + "/nvidia-smi.csv";
  write_file_atomically(smi, smi_line(0));
  env_.write_sidecar(env_.add_llm("g1"), {{"ignore_sigterm", true}, {"child_mode", false}});
  env_.add_llm("g2");
  env_.write_recipe_options({{"user.g1", {{"llamacpp_backend", "vulkan"}, {"gpu", 0}}},
                             {"user.g2", {{"llamacpp_backend", "vulkan"}, {"gpu", 0}}}});
  ASSERT_NO_FATAL_FAILURE(start_router(
      {"--max-loaded-models", "1", "--stop-grace", "3", "--memory-poll-interval", "3600"},
      gpu_env(env_, smi)));
  pid_t old_pid = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.g1", &old_pid));
  PidWatch old_backend(old_pid);
  ASSERT_EQ(chat(port(), "user.g2").status, 200);
  EXPECT_TRUE(old_backend.exited()) << "the GPU model started before the old one was gone";
}

TEST_F(MemoryTest, GpuModelsAreChargedToTheirGpuAndUnloadedWhenAnotherProgramTakesIt) {
  const std::string smi = env_.root() + "/nvidia-smi.csv";
  write_file_atomically(smi, smi_line(0));
  for (const char* key : {"g1", "g2", "g3"}) {
    add_sized_llm(env_, key, 300);
  }
  add_sized_llm(env_, "cpu", 10);
  env_.write_recipe_options({{"user.g1", {{"llamacpp_backend", "vulkan"}, {"gpu", 0}}},
                             {"user.g2", {{"llamacpp_backend", "vulkan"}, {"gpu", 0}}},
                             {"user.g3", {{"llamacpp_backend", "vulkan"}, {"gpu", 0}}}});
  ASSERT_NO_FATAL_FAILURE(start_router(
      {"--max-loaded-models", "8", "--memory-poll-interval", "0.2", "--memory-margin", "256"},
      gpu_env(env_, smi)));
  RouterEvents events(port());
  ASSERT_EQ(load(port(), "user.cpu").status, 200);
  ASSERT_EQ(load(port(), "user.g1").status, 200);
  ASSERT_EQ(load(port(), "user.g2").status, 200);
  Json h = health(port());
  // The child sees only its GPU, through one selector per runtime; never
  // ROCR_VISIBLE_DEVICES too, which would renumber what HIP sees.
  Json g1_env = fake_state(loaded_field(h, "user.g1", "backend_url").get<std::string>())["env"];
  EXPECT_EQ(g1_env.value("CUDA_VISIBLE_DEVICES", ""), "0") << g1_env.dump();
  EXPECT_EQ(g1_env.value("HIP_VISIBLE_DEVICES", ""), "0") << g1_env.dump();
  EXPECT_EQ(g1_env.value("GGML_VK_VISIBLE_DEVICES", ""), "0") << g1_env.dump();
  EXPECT_FALSE(g1_env.contains("ROCR_VISIBLE_DEVICES")) << g1_env.dump();
  if (std::getenv("CUDA_VISIBLE_DEVICES") == nullptr) {  // not inherited from this machine
    Json cpu_env = fake_state(loaded_field(h, "user.cpu", "backend_url").get<std::string>())["env"];
    EXPECT_FALSE(cpu_env.contains("CUDA_VISIBLE_DEVICES")) << cpu_env.dump();
  }
  const std::int64_t each = gpu0_estimate(h, "user.g1");
  EXPECT_GE(each, static_cast<std::int64_t>(300 * MiB)) << h.dump();
  EXPECT_EQ(gpu0_estimate(h, "user.cpu"), 0) << "a CPU model holds nothing on the GPU";
  // The GPU now shows what our two models hold.
  write_file_atomically(smi, smi_line(2 * each));
  ASSERT_TRUE(eventually([&] {
    Json gpu = device_entry(health(port()), "gpu0");
    return gpu.is_object() &&
           gpu["available"].get<std::int64_t>() < 400 * static_cast<std::int64_t>(MiB);
  })) << health(port()).dump();
  Json gpu = device_entry(health(port()), "gpu0");
  EXPECT_EQ(gpu["total"], 1000 * MiB);
  EXPECT_NEAR(gpu["budget"].get<double>(), 800.0 * MiB, 1.0 * MiB)
      << "80% of what is free plus what our models hold";
  EXPECT_EQ(gpu["used_by_router"], 2 * each);

  // A third does not fit the GPU's 800 MiB: the least recently used GPU
  // model goes, never the CPU model, whose memory is elsewhere.
  ASSERT_EQ(load(port(), "user.g3").status, 200);
  auto planned = events.next("eviction_planned", "user.g1");
  ASSERT_TRUE(planned.has_value());
  EXPECT_EQ((*planned)["reason"], "memory");
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.cpu", "user.g2", "user.g3"}));

  // Another program takes 236 MiB more: 100 MiB free is below the 256 MiB
  // margin, and the least recently used idle model on gpu0 is unloaded.
  write_file_atomically(smi, smi_line(2 * each + 236 * static_cast<std::int64_t>(MiB)));
  auto pressed = events.next("server_stopped", "user.g2");
  ASSERT_TRUE(pressed.has_value()) << "no unload under memory pressure";
  EXPECT_EQ((*pressed)["reason"], "memory-pressure");
  // Its memory is free again. Never the CPU model: its memory is elsewhere
  // (g3 may also go if a reading came before this rewrite).
  write_file_atomically(smi, smi_line(each + 236 * static_cast<std::int64_t>(MiB)));
  Names left = loaded_names(health(port()));
  EXPECT_TRUE(std::find(left.begin(), left.end(), "user.cpu") != left.end());
  EXPECT_EQ(events.count("server_stopped", "user.cpu"), 0);
}

}  // namespace
}  // namespace lemon::testing
