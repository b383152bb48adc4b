// Pure parts of the model store: the hub listing parser, file-name safety,
// download planning (variants, shards, mmproj, ONNX, exact files) and the
// /pull registration fields.
#include <gtest/gtest.h>

#include "lemon/models/download_plan.h"
#include "lemon/models/hub_client.h"
#include "lemon/models/registry_entry.h"
#include "lemon/models/user_registration.h"

namespace lemon {
namespace {

using nlohmann::json;

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

std::string sha256_of(char c) {
  return std::string(64, c);
}

RepoListing listing(const std::string& repo, const std::vector<std::string>& files) {
  RepoListing l;
  l.repo = repo;
  l.commit = kCommit;
  char c = 'a';
  for (const auto& f : files) {
    HubFile h;
    h.path = f;
    h.size = 100;
    h.blob_id = std::string(40, '1');
    h.sha256 = sha256_of(c);
    c = c == 'f' ? 'a' : static_cast<char>(c + 1);
    l.files.push_back(h);
  }
  return l;
}

ModelInfo model(const std::string& recipe, std::map<std::string, std::string> checkpoints) {
  ModelInfo m;
  m.name = "user.m";
  m.recipe = recipe;
  m.source = ModelSource::kUser;
  m.checkpoints = std::move(checkpoints);
  return m;
}

std::vector<std::string> paths(const std::vector<PlannedFile>& plan) {
  std::vector<std::string> out;
  for (const auto& p : plan) {
    out.push_back(p.repo + "/" + p.file.path);
  }
  return out;
}

// ---- listing ---------------------------------------------------------------------------

TEST(ModelsHubListing, ParsesSiblingsWithLfsAndBlobIds) {
  json body = {{"sha", kCommit},
               {"siblings",
                {{{"rfilename", "m-Q4_0.gguf"},
                  {"blobId", std::string(40, 'b')},
                  {"size", 134},
                  {"lfs", {{"sha256", sha256_of('C')}, {"size", 5000}, {"pointerSize", 134}}}},
                 {{"rfilename", "README.md"}, {"blobId", std::string(40, 'd')}, {"size", 12}}}}};
  auto l = parse_repo_listing("org/m", body.dump());
  ASSERT_TRUE(l.ok()) << l.error().message();
  EXPECT_EQ(l->commit, kCommit);
  ASSERT_EQ(l->files.size(), 2u);
  EXPECT_EQ(l->files[0].size, 5000u);             // the LFS size, not the pointer's
  EXPECT_EQ(l->files[0].etag(), sha256_of('c'));  // lower-cased
  EXPECT_EQ(l->files[1].etag(), std::string(40, 'd'));
  EXPECT_EQ(l->files[1].size, 12u);
}

TEST(ModelsHubListing, RefusesNamesThatEscapeTheSnapshot) {
  for (const char* bad :
       {"../../escape.gguf", "/abs.gguf", "a/../b.gguf", "a//b", "a\\b", "./x", "x\n"}) {
    json body = {{"sha", kCommit},
                 {"siblings", {{{"rfilename", bad}, {"blobId", std::string(40, 'b')}}}}};
    auto l = parse_repo_listing("org/m", body.dump());
    ASSERT_FALSE(l.ok()) << bad;
    EXPECT_EQ(l.error().code(), ErrorCode::kUpstreamProtocol) << bad;
  }
}

TEST(ModelsHubListing, RefusesMalformedAnswers) {
  for (const char* body : {"not json", "[]", R"({"siblings":[]})", R"({"sha":"zz","siblings":[]})",
                           R"({"sha":"0123456789abcdef0123456789abcdef01234567"})"}) {
    EXPECT_EQ(parse_repo_listing("org/m", body).error().code(), ErrorCode::kUpstreamProtocol)
        << body;
  }
}

TEST(ModelsHubListing, RepoIdsAndPaths) {
  EXPECT_TRUE(is_valid_repo_id("unsloth/Qwen3-0.6B-GGUF"));
  EXPECT_TRUE(is_valid_repo_id("a.b/c_d-e"));
  for (const char* bad : {"", "noslash", "a/b/c", "../x", "a/..", "-a/b", "a b/c", "a/"}) {
    EXPECT_FALSE(is_valid_repo_id(bad)) << bad;
  }
  EXPECT_TRUE(is_safe_repo_path("Q4_K_M/model-00001-of-00002.gguf"));
  EXPECT_FALSE(is_safe_repo_path(""));
  EXPECT_FALSE(is_safe_repo_path("a/"));
}

// ---- planning --------------------------------------------------------------------------

TEST(ModelsDownloadPlan, GgufVariantPicksExactlyThatFileAndTheMmproj) {
  auto info =
      model("llamacpp", {{"main", "org/m-GGUF:Q8_0"}, {"mmproj", "org/m-GGUF:mmproj-F16.gguf"}});
  std::map<std::string, RepoListing> ls;
  ls["org/m-GGUF"] =
      listing("org/m-GGUF", {"README.md", "m-Q4_0.gguf", "m-Q8_0.gguf", "mmproj-F16.gguf"});
  auto repos = plan_repositories(info);
  ASSERT_TRUE(repos.ok());
  EXPECT_EQ(*repos, std::vector<std::string>{"org/m-GGUF"});
  auto plan = plan_download(info, ls);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(paths(*plan),
            (std::vector<std::string>{"org/m-GGUF/m-Q8_0.gguf", "org/m-GGUF/mmproj-F16.gguf"}));
  EXPECT_EQ((*plan)[0].commit, kCommit);
}

TEST(ModelsDownloadPlan, ADraftCheckpointIsPulledWithItsModel) {
  auto info = model("llamacpp", {{"main", "org/m-GGUF:Q8_0"}, {"draft", "org/d-GGUF:Q4_0"}});
  std::map<std::string, RepoListing> ls;
  ls["org/m-GGUF"] = listing("org/m-GGUF", {"m-Q4_0.gguf", "m-Q8_0.gguf"});
  ls["org/d-GGUF"] = listing("org/d-GGUF", {"d-Q4_0.gguf", "d-Q8_0.gguf"});
  auto repos = plan_repositories(info);
  ASSERT_TRUE(repos.ok());
  EXPECT_EQ(*repos, (std::vector<std::string>{"org/m-GGUF", "org/d-GGUF"}));
  auto plan = plan_download(info, ls);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(paths(*plan),
            (std::vector<std::string>{"org/m-GGUF/m-Q8_0.gguf", "org/d-GGUF/d-Q4_0.gguf"}));
}

TEST(ModelsDownloadPlan, ShardedVariantTakesEveryShard) {
  auto info = model("llamacpp", {{"main", "org/big-GGUF:Q4_K_M"}});
  std::map<std::string, RepoListing> ls;
  ls["org/big-GGUF"] = listing("org/big-GGUF", {"big-Q4_K_M-00002-of-00002.gguf",
                                                "big-Q4_K_M-00001-of-00002.gguf", "big-Q8_0.gguf"});
  auto plan = plan_download(info, ls);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(paths(*plan),
            (std::vector<std::string>{"org/big-GGUF/big-Q4_K_M-00001-of-00002.gguf",
                                      "org/big-GGUF/big-Q4_K_M-00002-of-00002.gguf"}));
}

TEST(ModelsDownloadPlan, MissingVariantIsNotFoundAndNamesTheVariantsThatExist) {
  auto info = model("llamacpp", {{"main", "org/m-GGUF:Q3_K_S"}});
  std::map<std::string, RepoListing> ls;
  ls["org/m-GGUF"] = listing("org/m-GGUF", {"m-Q4_0.gguf", "m-Q8_0.gguf", "mmproj-m-F16.gguf",
                                            "Q6_K/m-Q6_K-00001-of-00002.gguf"});
  auto plan = plan_download(info, ls);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().code(), ErrorCode::kRemoteNotFound);
  EXPECT_EQ(plan.error().param(), "checkpoint");
  EXPECT_NE(plan.error().message().find("Q3_K_S"), std::string::npos);
  EXPECT_NE(plan.error().message().find("Q4_0, Q6_K, Q8_0"), std::string::npos)
      << plan.error().message();
  EXPECT_EQ(plan.error().message().find("mmproj"), std::string::npos);
}

TEST(ModelsDownloadPlan, OnnxTakesTheWholeRepositoryAndExactFilesTakeOne) {
  auto onnx = model("ryzenai-llm", {{"main", "amd/m-onnx"}});
  std::map<std::string, RepoListing> ls;
  ls["amd/m-onnx"] = listing("amd/m-onnx", {"genai_config.json", "model.onnx", "sub/x.data"});
  auto plan = plan_download(onnx, ls);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->size(), 3u);

  auto whisper = model("whispercpp", {{"main", "ggml/whisper:ggml-tiny.bin"}});
  ls["ggml/whisper"] = listing("ggml/whisper", {"ggml-base.bin", "ggml-tiny.bin"});
  plan = plan_download(whisper, ls);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(paths(*plan), std::vector<std::string>{"ggml/whisper/ggml-tiny.bin"});

  auto absent = model("whispercpp", {{"main", "ggml/whisper:ggml-huge.bin"}});
  EXPECT_EQ(plan_download(absent, ls).error().code(), ErrorCode::kRemoteNotFound);
}

TEST(ModelsDownloadPlan, SdCppFetchesEveryRequiredRoleFromEachRepository) {
  auto sd = model("sd-cpp", {{"main", "org/flux:flux.gguf"},
                             {"text_encoder", "org/te:te.safetensors"},
                             {"vae", "org/vae:ae.safetensors"},
                             {"llm", "org/flux:flux.gguf"}});
  auto repos = plan_repositories(sd);
  ASSERT_TRUE(repos.ok());
  EXPECT_EQ(*repos, (std::vector<std::string>{"org/flux", "org/te", "org/vae"}));
  std::map<std::string, RepoListing> ls;
  ls["org/flux"] = listing("org/flux", {"flux.gguf"});
  ls["org/te"] = listing("org/te", {"te.safetensors"});
  ls["org/vae"] = listing("org/vae", {"ae.safetensors"});
  auto plan = plan_download(sd, ls);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(plan->size(), 3u);  // flux.gguf once
}

TEST(ModelsDownloadPlan, ModelsTheStoreCannotDownload) {
  auto flm = model("flm", {{"main", "llama3.2:1b"}});
  EXPECT_EQ(plan_repositories(flm).error().code(), ErrorCode::kUnsupportedOperation);
  auto local = model("llamacpp", {{"main", "/models/x.gguf"}});
  local.source = ModelSource::kUserLocalPath;
  EXPECT_EQ(plan_repositories(local).error().code(), ErrorCode::kUnsupportedOperation);
  auto bad = model("llamacpp", {{"main", "not a repo:Q4_0"}});
  EXPECT_EQ(plan_repositories(bad).error().code(), ErrorCode::kInvalidRequest);
  EXPECT_EQ(plan_repositories(bad).error().param(), "checkpoint");
}

// ---- registration ----------------------------------------------------------------------

TEST(ModelsUserRegistration, BuildsLemonadesEntry) {
  json body = {{"model_name", "user.tiny"}, {"checkpoint", "org/tiny-GGUF:Q4_0"},
               {"recipe", "llamacpp"},      {"reasoning", true},
               {"embedding", true},         {"labels", {"zeta"}},
               {"mmproj", "mmproj.gguf"},   {"stream", false}};
  ASSERT_TRUE(has_registration_fields(body));
  auto reg = parse_user_registration("user.tiny", body);
  ASSERT_TRUE(reg.ok()) << reg.error().message();
  EXPECT_EQ(reg->key, "tiny");
  EXPECT_EQ(reg->entry["checkpoint"], "org/tiny-GGUF:Q4_0");
  EXPECT_EQ(reg->entry["recipe"], "llamacpp");
  EXPECT_EQ(reg->entry["mmproj"], "mmproj.gguf");
  EXPECT_EQ(reg->entry["labels"],
            nlohmann::ordered_json({"custom", "embeddings", "reasoning", "zeta"}));
  EXPECT_EQ(reg->entry["suggested"], true);
  EXPECT_FALSE(reg->entry.contains("stream"));
  auto parsed = parse_registry_entry("user.tiny", reg->entry, ModelSource::kUser);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->checkpoints.at("mmproj"), "org/tiny-GGUF:mmproj.gguf");

  json sd = {{"checkpoint", "org/sd:model.safetensors"}, {"recipe", "sd-cpp"}};
  auto image = parse_user_registration("user.pic", sd);
  ASSERT_TRUE(image.ok());
  EXPECT_EQ(image->entry["labels"], nlohmann::ordered_json({"custom", "image"}));
}

TEST(ModelsUserRegistration, RejectsBadFieldsNamingThem) {
  struct Case {
    const char* name;
    json body;
    const char* param;
  } cases[] = {
      {"tiny", {{"checkpoint", "org/x:Q4_0"}, {"recipe", "llamacpp"}}, "model_name"},
      {"user.", {{"checkpoint", "org/x:Q4_0"}, {"recipe", "llamacpp"}}, "model_name"},
      {"user.a/b", {{"checkpoint", "org/x:Q4_0"}, {"recipe", "llamacpp"}}, "model_name"},
      {"user...", {{"checkpoint", "org/x:Q4_0"}, {"recipe", "llamacpp"}}, "model_name"},
      {"user.x", {{"checkpoint", "org/x:Q4_0"}, {"recipe", "vllm"}}, "recipe"},
      {"user.x", {{"checkpoint", "org/x:Q4_0"}}, "recipe"},
      {"user.x", {{"recipe", "llamacpp"}}, "checkpoint"},
      {"user.x", {{"checkpoint", "not a repo"}, {"recipe", "llamacpp"}}, "checkpoint"},
      {"user.x", {{"checkpoint", "org/x-GGUF"}, {"recipe", "llamacpp"}}, "checkpoint"},
      {"user.x", {{"checkpoint", "org/x:../../etc/passwd"}, {"recipe", "llamacpp"}}, "checkpoint"},
      {"user.x",
       {{"checkpoint", "org/x:Q4_0"}, {"recipe", "llamacpp"}, {"mmproj", "../m"}},
       "mmproj"},
      {"user.x", {{"checkpoint", "org/x:Q4_0"}, {"recipe", "llamacpp"}, {"labels", "a"}}, "labels"},
      {"user.x",
       {{"checkpoints", {{"mmproj", "org/x:m.gguf"}}}, {"recipe", "llamacpp"}},
       "checkpoint"},
  };
  for (const auto& c : cases) {
    auto reg = parse_user_registration(c.name, c.body);
    ASSERT_FALSE(reg.ok()) << c.name << " " << c.body.dump();
    EXPECT_EQ(reg.error().code(), ErrorCode::kInvalidRequest) << c.body.dump();
    EXPECT_EQ(reg.error().param(), c.param)
        << c.name << " " << c.body.dump() << ": " << reg.error().message();
  }
}

}  // namespace
}  // namespace lemon
