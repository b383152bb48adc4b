// The router against a real sd-server (LEMON_REAL_SD_SERVER, issue #31), up
// to the model load: stable-diffusion.cpp checks every tensor against its
// fixed architectures (a UNet of 320 base channels, CLIP's 49,408-token
// vocabulary), so no reduced random-weight model loads; the test that shows
// it fails, and says so, the day one does.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "real/real_backend.h"
#include "support/http_client.h"

namespace lemon::testing {
namespace {

using nlohmann::json;

// A safetensors file of zero-filled f16 tensors: an 8-byte little-endian
// header length, the JSON header, the data.
void write_safetensors(
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

std::string load_error(const HttpReply& r) {
  return r.json()["error"].value("message", std::string());
}

class SdTest : public RealSdTest {
 protected:
  void add_image_model(const std::string& key, const json& checkpoints) {
    env_.add_user_model(key, {{"checkpoints", checkpoints},
                              {"recipe", "sd-cpp"},
                              {"labels", {"image"}},
                              {"source", "local_path"}});
  }
};

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
    const std::string message = load_error(r);
    EXPECT_NE(message.find("new_sd_ctx_t failed"), std::string::npos) << message;
    EXPECT_NE(message.find("exit code 1"), std::string::npos) << message;
    EXPECT_EQ(message.find("invalid parameter"), std::string::npos) << message;
  }
  EXPECT_TRUE(health(port())["all_models_loaded"].empty());
}

// The evidence that no tiny model can load: a model whose tensors are
// named as SD 1.x's but smaller is refused by the loader's shape check
// (src/model.cpp, ModelLoader::load_tensors, at 1f30df9).
TEST_F(SdTest, AReducedModelIsRefusedByTheLoadersShapeCheck) {
  const std::string tiny = env_.models_dir() + "/tiny-sd.safetensors";
  write_safetensors(tiny,
                    {{"model.diffusion_model.input_blocks.0.0.weight", {32, 4, 3, 3}},
                     {"model.diffusion_model.input_blocks.0.0.bias", {32}},
                     {"cond_stage_model.transformer.text_model.embeddings.token_embedding.weight",
                      {49408, 768}}});
  add_image_model("tiny", {{"main", tiny}});
  ASSERT_NO_FATAL_FAILURE(start_real_router());
  HttpReply r = load(port(), "user.tiny");
  ASSERT_EQ(r.status, 500) << "sd-server loaded a reduced model: write a tiny random-weight "
                              "model generator and test image generation (issue #31). "
                           << r.body;
  const std::string message = load_error(r);
  EXPECT_NE(message.find("has wrong shape"), std::string::npos) << message;
  EXPECT_NE(message.find("expected [320"), std::string::npos) << message;
}

}  // namespace
}  // namespace lemon::testing
