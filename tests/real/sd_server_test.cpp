// The router against a real sd-server (LEMON_REAL_SD_SERVER, issue #31) and
// a random-weight model of SDXS's shape, the smallest family
// stable-diffusion.cpp loads, written once per run by
// tests/models/make_sdxs_like.py (0.9 GB; docs/testing.md): load and
// readiness, generations, edits and variations in b64_json, bad input, an
// unload's exit status, a crash and the reload after it, two models
// swapping, out of memory, and the memory estimate against the process.
// Random weights make the images noise; the tests check PNGs, statuses and
// processes.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "real/real_backend.h"
#include "support/http_client.h"
#include "support/process_signal.h"
#include "support/process_watch.h"
#include "support/raw_http.h"
#include "support/router_events.h"
#include "support/temp_dir.h"

namespace lemon::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The model, made once for every test of this program.
std::unique_ptr<TempDir> g_sd_model_dir;
std::string g_sdxs_model;

std::string base64_decoded(const std::string& text) {
  std::string out(text.size() / 4 * 3 + 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) {
    return {};
  }
  const auto padding = static_cast<int>(
      std::count(text.end() - std::min<std::size_t>(2, text.size()), text.end(), '='));
  out.resize(static_cast<std::size_t>(n - padding));
  return out;
}

struct PngSize {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
};

// The size in a PNG's IHDR, or 0x0 when `png` is not a PNG.
PngSize png_size(const std::string& png) {
  if (png.size() < 24 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0 ||
      png.compare(12, 4, "IHDR") != 0) {
    return {};
  }
  auto be32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      v = (v << 8) | static_cast<unsigned char>(png[at + i]);
    }
    return v;
  };
  return {be32(16), be32(20)};
}

// A safetensors file of zero-filled f16 tensors: an 8-byte little-endian
// header length, the JSON header, the data.
void write_zero_safetensors(
    const std::string& path,
    const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& tensors) {
  json header = json::object();
  std::int64_t offset = 0;
  for (const auto& [name, shape] : tensors) {
    std::int64_t count = 1;
    for (auto d : shape) {
      count *= d;
    }
    header[name] = {
        {"dtype", "F16"}, {"shape", shape}, {"data_offsets", {offset, offset + 2 * count}}};
    offset += 2 * count;
  }
  const std::string text = header.dump();
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t size = text.size();
  for (int i = 0; i < 8; ++i) {
    out.put(static_cast<char>((size >> (8 * i)) & 0xFF));
  }
  out << text << std::string(static_cast<std::size_t>(offset), '\0');
}

// The peak resident memory of `pid` (VmHWM), in bytes.
std::int64_t peak_rss_bytes(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      return std::stoll(line.substr(6)) * 1024;
    }
  }
  return 0;
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class SdTest : public RealSdTest {
 protected:
  static void SetUpTestSuite() {
    if (real_program("LEMON_REAL_SD_SERVER").empty() || !g_sdxs_model.empty()) {
      return;
    }
    g_sd_model_dir = std::make_unique<TempDir>("lemon-sdxs");
    const std::string path = (g_sd_model_dir->path() / "sdxs-like.safetensors").string();
    if (run_program({real_python(),
                     std::string(LEMON_SOURCE_DIR) + "/tests/models/make_sdxs_like.py", path}) ==
        0) {
      g_sdxs_model = path;
    }
  }
  static void TearDownTestSuite() {
    g_sdxs_model.clear();
    g_sd_model_dir.reset();
  }

  // user.<key>: the SDXS-shaped model at one step, 64x64 unless `options`
  // say otherwise; `file` defaults to the generated one.
  void add_sdxs(const std::string& key, const json& options = json::object(),
                const std::string& file = {}) {
    ASSERT_FALSE(g_sdxs_model.empty())
        << "tests/models/make_sdxs_like.py failed: it needs python3 with numpy "
           "(LEMON_PYTHON, else /usr/bin/python3) and 0.9 GB of space";
    add_image_model(key, {{"main", file.empty() ? g_sdxs_model : file}});
    json o = {{"steps", 1}, {"cfg_scale", 1.0}, {"width", 64}, {"height", 64}};
    o.update(options);
    recipe_options_["user." + key] = o;
    env_.write_recipe_options(recipe_options_);
  }
  void add_image_model(const std::string& key, const json& checkpoints) {
    env_.add_user_model(key, {{"checkpoints", checkpoints},
                              {"recipe", "sd-cpp"},
                              {"labels", {"image"}},
                              {"source", "local_path"}});
  }
  HttpReply generate(const std::string& model, const json& extra = json::object()) {
    json body = {{"model", model}, {"prompt", "a lemon on a table"}};
    body.update(extra);
    return http_post(port(), "/api/v1/images/generations", body);
  }
  HttpReply post_form(const std::string& route, const std::vector<FormPart>& parts) {
    return raw_request(port(), "POST", "/api/v1/" + route,
                       {{"Content-Type", multipart_content_type()}}, multipart_body(parts));
  }
  // Every image of an answer, decoded; a failure names what was wrong.
  static std::vector<std::string> images_of(const HttpReply& r) {
    std::vector<std::string> out;
    const json j = r.json();
    EXPECT_TRUE(j["data"].is_array()) << r.body.substr(0, 300);
    for (const auto& item : j["data"]) {
      EXPECT_TRUE(item.contains("b64_json")) << item.dump().substr(0, 300);
      out.push_back(base64_decoded(item.value("b64_json", std::string())));
    }
    return out;
  }

  json recipe_options_ = json::object();
};

TEST_F(SdTest, LoadsAndGeneratesPngsInB64Json) {
  ASSERT_NO_FATAL_FAILURE(add_sdxs("s"));
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  const auto started = Clock::now();
  ASSERT_NO_FATAL_FAILURE(load_ok("user.s"));
  RecordProperty("load_ms", static_cast<int>(ms_since(started)));

  HttpReply r = generate("user.s", {{"n", 2}, {"seed", 7}, {"size", "64x64"}});
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
  const auto images = images_of(r);
  ASSERT_EQ(images.size(), 2u);
  for (const auto& png : images) {
    const PngSize size = png_size(png);
    EXPECT_EQ(size.width, 64u) << "not a 64x64 PNG";
    EXPECT_EQ(size.height, 64u);
  }
  // The load options' size when the request names none; one the model
  // cannot take exactly is aligned up by sd-server (docs/api.md).
  HttpReply defaults = generate("user.s");
  ASSERT_EQ(defaults.status, 200) << defaults.body.substr(0, 300);
  EXPECT_EQ(png_size(images_of(defaults).at(0)).width, 64u);
  HttpReply odd = generate("user.s", {{"size", "65x65"}});
  ASSERT_EQ(odd.status, 200) << odd.body.substr(0, 300);
  EXPECT_EQ(png_size(images_of(odd).at(0)).width, 128u);
}

TEST_F(SdTest, EditsAndVariationsAnswerWithImages) {
  ASSERT_NO_FATAL_FAILURE(add_sdxs("s"));
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  HttpReply first = generate("user.s");
  ASSERT_EQ(first.status, 200) << first.body.substr(0, 300);
  const std::string png = images_of(first).at(0);

  HttpReply edit = post_form("images/edits",
                             {form_field("model", "user.s"), form_field("prompt", "make it blue"),
                              form_field("n", "2"), form_file("image", png, "in.png", "image/png"),
                              form_file("mask", png, "mask.png", "image/png")});
  ASSERT_EQ(edit.status, 200) << edit.body.substr(0, 300);
  EXPECT_EQ(images_of(edit).size(), 2u);
  HttpReply variation =
      post_form("images/variations", {form_field("model", "user.s"), form_field("size", "64x64"),
                                      form_file("image[]", png, "in.png", "image/png")});
  ASSERT_EQ(variation.status, 200) << variation.body.substr(0, 300);
  EXPECT_EQ(png_size(images_of(variation).at(0)).width, 64u);
}

// Each gets a clear 400 about its field before sd-server sees it, and the
// same sd-server goes on serving. Asked directly, sd-server answers 200 to
// an image it cannot decode (it skips it and draws from the prompt alone).
TEST_F(SdTest, BadInputGetsA400AndTheBackendLivesOn) {
  ASSERT_NO_FATAL_FAILURE(add_sdxs("s"));
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  pid_t pid = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.s", &pid));
  const std::string junk(2048, '\x7f');

  auto expect_400 = [&](const HttpReply& r, const char* param) {
    EXPECT_EQ(r.status, 400) << param << ": " << r.body.substr(0, 300);
    EXPECT_EQ(r.json()["error"]["param"], param) << r.body.substr(0, 300);
  };
  expect_400(generate("user.s", {{"size", "4096x4096"}}), "size");
  expect_400(generate("user.s", {{"n", 9}}), "n");
  expect_400(post_form("images/variations", {form_field("model", "user.s"),
                                             form_file("image", junk, "a.png", "image/png")}),
             "image");
  expect_400(post_form("images/variations", {form_field("model", "user.s"),
                                             form_file("image", "", "a.png", "image/png")}),
             "image");
  HttpReply first = generate("user.s");
  ASSERT_EQ(first.status, 200);
  const std::string png = images_of(first).at(0);
  expect_400(post_form("images/edits", {form_field("model", "user.s"), form_field("prompt", "x"),
                                        form_file("image", png, "a.png", "image/png"),
                                        form_field("strength", "0.4")}),
             "strength");

  const std::string url = loaded_field(health(port()), "user.s", "backend_url");
  HttpReply direct = url_request(
      url, "POST", "/v1/images/edits",
      multipart_body(
          {form_field("prompt", "x <sd_cpp_extra_args>{\"steps\":1}</sd_cpp_extra_args>"),
           form_field("size", "64x64"), form_file("image[]", junk, "a.png", "image/png")}),
      {{"Content-Type", multipart_content_type()}});
  EXPECT_EQ(direct.status, 200)
      << "sd-server now refuses an image it cannot decode; the router's check may stay: "
      << direct.body.substr(0, 300);

  EXPECT_EQ(loaded_pid(port(), "user.s"), pid) << "the backend was restarted";
  EXPECT_EQ(generate("user.s").status, 200);
}

// sd-server installs no signal handler: the router's one SIGTERM ends it.
TEST_F(SdTest, AnUnloadedSdServerEndsOnTheRoutersSigterm) {
  ASSERT_NO_FATAL_FAILURE(add_sdxs("s"));
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  ASSERT_NO_FATAL_FAILURE(load_ok("user.s"));
  RouterEvents events(port());
  ASSERT_EQ(http_post(port(), "/api/v1/unload", json{{"model_name", "user.s"}}).status, 200);
  auto stopped = events.next("server_stopped", "user.s");
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ((*stopped)["exit"], "killed by signal 15 (SIGTERM)") << stopped->dump();
  RecordProperty("stop_ms", static_cast<int>((*stopped)["stop_s"].get<double>() * 1000));
}

TEST_F(SdTest, AKilledSdServerIsStartedAgainByTheNextRequest) {
  ASSERT_NO_FATAL_FAILURE(add_sdxs("s"));
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  pid_t pid = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.s", &pid));
  ASSERT_NO_FATAL_FAILURE(signal_process(pid, SIGKILL));
  ASSERT_TRUE(wait_pid_exit(pid, std::chrono::seconds(10)));
  HttpReply r = generate("user.s");
  EXPECT_EQ(r.status, 200) << r.body.substr(0, 300);
  const int again = loaded_pid(port(), "user.s");
  EXPECT_GT(again, 0);
  EXPECT_NE(again, pid);
}

TEST_F(SdTest, TwoModelsSwapWithOneLoaded) {
  // A second file (a hard link: no second 0.9 GB) makes a second model.
  const std::string second = env_.models_dir() + "/sdxs-b.safetensors";
  ASSERT_NO_FATAL_FAILURE(add_sdxs("a"));
  std::error_code ec;
  std::filesystem::create_hard_link(g_sdxs_model, second, ec);
  if (ec) {
    std::filesystem::copy_file(g_sdxs_model, second, ec);
  }
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_NO_FATAL_FAILURE(add_sdxs("b", json::object(), second));
  ASSERT_NO_FATAL_FAILURE(start_real_router({"--max-loaded-models", "1"}));
  double worst_switch_ms = 0;
  for (int round = 0; round < 2; ++round) {
    for (const char* model : {"user.a", "user.b"}) {
      const auto started = Clock::now();
      HttpReply r = generate(model);
      ASSERT_EQ(r.status, 200) << model << ": " << r.body.substr(0, 300);
      worst_switch_ms = std::max(worst_switch_ms, ms_since(started));
      EXPECT_EQ(loaded_names(health(port())), Names{model});
    }
  }
  RecordProperty("worst_switch_ms", static_cast<int>(worst_switch_ms));
}

// sd-server out of memory while it loads (under `ulimit -v`, its own
// "failed to allocate CPU buffer" lines and exit 1): a 507 out_of_memory.
TEST_F(SdTest, AnSdServerOutOfMemoryIsA507) {
  ASSERT_NO_FATAL_FAILURE(add_sdxs("s"));
  const std::string wrapper = env_.root() + "/sd-server-in-600-mb";
  {
    std::ofstream out(wrapper);
    out << "#!/bin/sh\nulimit -v 600000\nexec '" << program_ << "' \"$@\"\n";
  }
  ASSERT_EQ(::chmod(wrapper.c_str(), 0755), 0);
  ASSERT_NO_FATAL_FAILURE(start_router({}, {{"LEMONADE_SDCPP_CPU_BIN", wrapper}}));
  HttpReply r = load(port(), "user.s");
  EXPECT_EQ(r.status, 507) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "out_of_memory") << r.body;
}

// The estimate the router admits an image model with covers the process's
// peak while it draws an image of the load options' size (issue #31 §4).
TEST_F(SdTest, TheMemoryEstimateCoversThePeakOfAGeneration) {
  ASSERT_NO_FATAL_FAILURE(add_sdxs("s", {{"width", 256}, {"height", 256}}));
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  pid_t pid = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.s", &pid));
  ASSERT_EQ(generate("user.s").status, 200);
  const std::int64_t peak = peak_rss_bytes(pid);
  const json memory = loaded_field(health(port()), "user.s", "memory");
  const std::int64_t estimate = memory["estimate"].value("ram", std::int64_t{0});
  RecordProperty("peak_rss_mib", static_cast<int>(peak >> 20));
  RecordProperty("estimate_mib", static_cast<int>(estimate >> 20));
  EXPECT_GE(estimate, peak) << memory.dump();
  EXPECT_LE(estimate, 2 * peak) << "far above the process: " << memory.dump();
}

// docs/benchmarks.md "Real backends": the router's added latency on an
// image, against the same sd-server called directly.
TEST_F(SdTest, TheRouterAddsLittleToAnImage) {
  ASSERT_NO_FATAL_FAILURE(add_sdxs("s"));
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  ASSERT_NO_FATAL_FAILURE(load_ok("user.s"));
  const std::string url = loaded_field(health(port()), "user.s", "backend_url");
  const std::string direct_body = json{
      {"prompt",
       "a lemon on a table <sd_cpp_extra_args>{\"cfg_scale\":1.0,\"steps\":1}"
       "</sd_cpp_extra_args>"},
      {"size", "64x64"},
      {"response_format", "b64_json"}}.dump();
  std::vector<double> direct;
  std::vector<double> routed;
  for (int i = 0; i < 7; ++i) {
    auto t = Clock::now();
    ASSERT_EQ(url_request(url, "POST", "/v1/images/generations", direct_body,
                          {{"Content-Type", "application/json"}})
                  .status,
              200);
    direct.push_back(ms_since(t));
    t = Clock::now();
    ASSERT_EQ(generate("user.s").status, 200);
    routed.push_back(ms_since(t));
  }
  const double added = median_of(routed) - median_of(direct);
  RecordProperty("direct_ms", static_cast<int>(median_of(direct)));
  RecordProperty("routed_ms", static_cast<int>(median_of(routed)));
  RecordProperty("added_us", static_cast<int>(added * 1000));
  std::cout << "image 64x64, 1 step: direct " << median_of(direct) << " ms, routed "
            << median_of(routed) << " ms, added " << added << " ms\n";
  EXPECT_LT(added, std::max(20.0, 0.25 * median_of(direct)))
      << "the router adds more than a quarter to an image";
}

// Both command lines the router builds (one file, or the diffusion model,
// text encoder and VAE apart) are taken by the real program: it gets as far
// as reading the model, and the load error carries its own lines, never a
// complaint about an argument.
TEST_F(SdTest, TheRoutersCommandLinesAreTakenAndALoadFailureCarriesTheProgramsLines) {
  const std::string junk = env_.models_dir() + "/junk.safetensors";
  std::ofstream(junk, std::ios::binary) << std::string(4096, 'x');
  add_image_model("single", {{"main", junk}});
  add_image_model("split", {{"main", junk}, {"text_encoder", junk}, {"vae", junk}});
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  for (const char* model : {"user.single", "user.split"}) {
    HttpReply r = load(port(), model);
    EXPECT_EQ(r.status, 500) << model << ": " << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "model_load_error") << r.body;
    const std::string message = r.json()["error"].value("message", std::string());
    EXPECT_NE(message.find("new_sd_ctx_t failed"), std::string::npos) << message;
    EXPECT_NE(message.find("exit code 1"), std::string::npos) << message;
    EXPECT_EQ(message.find("invalid parameter"), std::string::npos) << message;
  }
  EXPECT_TRUE(health(port())["all_models_loaded"].empty());
}

// Why the generator writes SDXS's full shapes: a model whose tensors are
// named as SD 1.x's but smaller is refused by the loader's shape check
// (src/model.cpp, ModelLoader::load_tensors, at 1f30df9).
TEST_F(SdTest, AReducedModelIsRefusedByTheLoadersShapeCheck) {
  const std::string tiny = env_.models_dir() + "/tiny-sd.safetensors";
  write_zero_safetensors(
      tiny, {{"model.diffusion_model.input_blocks.0.0.weight", {32, 4, 3, 3}},
             {"model.diffusion_model.input_blocks.0.0.bias", {32}},
             {"cond_stage_model.transformer.text_model.embeddings.token_embedding.weight",
              {49408, 768}}});
  add_image_model("tiny", {{"main", tiny}});
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  HttpReply r = load(port(), "user.tiny");
  ASSERT_EQ(r.status, 500) << "sd-server loaded a reduced model: make_sdxs_like.py could write "
                              "a smaller one (issue #31). "
                           << r.body;
  const std::string message = r.json()["error"].value("message", std::string());
  EXPECT_NE(message.find("has wrong shape"), std::string::npos) << message;
  EXPECT_NE(message.find("expected [320"), std::string::npos) << message;
}

}  // namespace
}  // namespace lemon::testing
