// llama.cpp's model status (model_status.h) from the router's state of a
// model, and GET /models' "status" object in llama.cpp's key order.
#include "lemon/api/llamacpp/model_status.h"

#include <gtest/gtest.h>

namespace lemon::api {
namespace {

TEST(LlamaModelStatus, NothingKnownIsUnloaded) {
  EXPECT_EQ(llama_status(ServedState{}), LlamaStatus::kUnloaded);
}

TEST(LlamaModelStatus, AQueuedOrRunningLoadIsLoading) {
  ServedState s;
  s.loading = true;
  EXPECT_EQ(llama_status(s), LlamaStatus::kLoading);
}

TEST(LlamaModelStatus, AServerInTheTableIsLoadedEvenWhileAnotherReplicaLoads) {
  ServedState s;
  s.servers = 1;
  EXPECT_EQ(llama_status(s), LlamaStatus::kLoaded);
  s.loading = true;
  EXPECT_EQ(llama_status(s), LlamaStatus::kLoaded);
}

TEST(LlamaModelStatus, SleepingOnlyWhenEveryServerSleeps) {
  ServedState s;
  s.servers = 2;
  s.sleeping_servers = 1;
  EXPECT_EQ(llama_status(s), LlamaStatus::kLoaded);
  s.sleeping_servers = 2;
  EXPECT_EQ(llama_status(s), LlamaStatus::kSleeping);
}

TEST(LlamaModelStatus, ADownloadShowsOnlyWhenNothingRunsOrLoads) {
  ServedState s;
  s.downloading = true;
  EXPECT_EQ(llama_status(s), LlamaStatus::kDownloading);
  s.loading = true;
  EXPECT_EQ(llama_status(s), LlamaStatus::kLoading);
}

TEST(LlamaModelStatus, NamesAreLlamaCpps) {
  EXPECT_STREQ(llama_status_name(LlamaStatus::kUnloaded), "unloaded");
  EXPECT_STREQ(llama_status_name(LlamaStatus::kLoading), "loading");
  EXPECT_STREQ(llama_status_name(LlamaStatus::kLoaded), "loaded");
  EXPECT_STREQ(llama_status_name(LlamaStatus::kSleeping), "sleeping");
  EXPECT_STREQ(llama_status_name(LlamaStatus::kDownloading), "downloading");
  EXPECT_STREQ(llama_status_name(LlamaStatus::kDownloaded), "downloaded");
}

TEST(LlamaModelStatusJson, KeysInLlamaCppsOrder) {
  StatusDetail d;
  d.status = LlamaStatus::kLoaded;
  d.args = {"/bin/llama-server", "--port", "8001"};
  d.preset = "[m]\nc = 4096\n\n";
  const auto j = status_json(d);
  EXPECT_EQ(j.dump(), R"({"value":"loaded","args":["/bin/llama-server","--port","8001"],)"
                      R"("preset":"[m]\nc = 4096\n\n"})");
}

TEST(LlamaModelStatusJson, AFailureShowsOnlyWhileUnloaded) {
  StatusDetail d;
  d.failed_exit = 3;
  EXPECT_EQ(status_json(d).dump(), R"({"value":"unloaded","args":[],"exit_code":3,"failed":true})");
  d.status = LlamaStatus::kLoading;
  EXPECT_FALSE(status_json(d).contains("failed"));
  EXPECT_FALSE(status_json(d).contains("exit_code"));
}

TEST(LlamaModelStatusJson, ProgressWhileLoadingAndDownloading) {
  StatusDetail d;
  d.status = LlamaStatus::kLoading;
  d.load = LoadProgress{{"text_model", "mmproj_model"}, "text_model", 0.5};
  auto j = status_json(d);
  ASSERT_TRUE(j.contains("progress")) << j.dump();
  EXPECT_EQ(j["progress"]["current"], "text_model");
  EXPECT_DOUBLE_EQ(j["progress"]["value"].get<double>(), 0.5);

  d.status = LlamaStatus::kDownloading;
  d.downloads = {{"m.gguf", {{"done", 10}, {"total", 20}}}};
  j = status_json(d);
  EXPECT_EQ(j["progress"]["m.gguf"]["total"], 20) << j.dump();

  d.status = LlamaStatus::kLoaded;
  EXPECT_FALSE(status_json(d).contains("progress"));
}

}  // namespace
}  // namespace lemon::api
