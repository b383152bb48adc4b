// The model store end to end (issue #7): the real router binary pulls from a
// fake Hugging Face hub on loopback (HF_ENDPOINT), writes the real hub cache
// layout, resumes, verifies, deletes, and downloads on first use.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>

#include "lemon/download/checksum.h"
#include "support/fake_hub.h"
#include "support/http_client.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kRepo = "org/tiny-GGUF";
constexpr std::uint64_t kQ4Size = 3u << 20;  // 3 MiB
constexpr std::uint64_t kQ8Size = 2u << 20;

std::string stored_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Checks a repository folder the router wrote against huggingface_hub's
// layout rules: refs/main holds the commit (no newline); every snapshot
// entry is a relative symlink into ../blobs whose name is the content's
// sha256 (LFS) or git blob sha1; nothing unfinished is left.
void expect_hub_layout(const fs::path& repo, const std::string& commit,
                       const std::set<std::string>& files) {
  EXPECT_EQ(stored_text(repo / "refs" / "main"), commit);
  fs::path snap = repo / "snapshots" / commit;
  std::set<std::string> seen;
  for (const auto& e : fs::recursive_directory_iterator(snap)) {
    if (e.is_directory()) {
      continue;
    }
    std::string rel = e.path().lexically_relative(snap).generic_string();
    seen.insert(rel);
    ASSERT_TRUE(fs::is_symlink(e.symlink_status())) << rel;
    fs::path target = fs::read_symlink(e.path());
    EXPECT_TRUE(target.is_relative()) << rel << " -> " << target;
    fs::path blob = (e.path().parent_path() / target).lexically_normal();
    EXPECT_EQ(blob.parent_path(), repo / "blobs") << rel;
    ASSERT_TRUE(fs::is_regular_file(blob)) << rel;
    std::string name = blob.filename().string();
    auto kind = name.size() == 64 ? download::Checksum::Kind::kSha256
                                  : download::Checksum::Kind::kGitBlobSha1;
    auto hash = download::hash_file(blob, kind);
    ASSERT_TRUE(hash.ok());
    EXPECT_EQ(*hash, name) << rel;
  }
  EXPECT_EQ(seen, files);
  std::size_t blobs = 0;
  for (const auto& e : fs::directory_iterator(repo / "blobs")) {
    EXPECT_EQ(e.path().extension(), "") << "left behind: " << e.path();
    ++blobs;
  }
  EXPECT_EQ(blobs, files.size()) << "a blob no snapshot entry links to";
}

class ModelStoreTest : public RouterTest {
 protected:
  void SetUp() override {
    hub_.add_random_file(kRepo, "tiny-Q4_0.gguf", kQ4Size, 1);
    hub_.add_random_file(kRepo, "tiny-Q8_0.gguf", kQ8Size, 2);
    hub_.add_file(kRepo, "mmproj-tiny-F16.gguf", "projector weights");
    hub_.add_file(kRepo, "README.md", "# tiny\n");
    ASSERT_TRUE(hub_.start());
  }

  std::map<std::string, std::string> hub_env(std::map<std::string, std::string> extra = {}) {
    extra["HF_ENDPOINT"] = hub_.endpoint();
    return extra;
  }

  void start_online(std::map<std::string, std::string> extra = {}) {
    ASSERT_NO_FATAL_FAILURE(start_router({}, hub_env(std::move(extra))));
  }

  static json registration(const std::string& name, const std::string& variant,
                           const json& extra = json::object()) {
    json body = {{"model_name", name},
                 {"checkpoint", std::string(kRepo) + ":" + variant},
                 {"recipe", "llamacpp"}};
    body.update(extra);
    return body;
  }

  fs::path repo_dir() const { return fs::path(env_.hf_cache()) / "models--org--tiny-GGUF"; }

  std::string commit() { return hub_.listing(kRepo)["sha"].get<std::string>(); }

  // File requests (the CDN hop) the hub saw for `file`.
  std::vector<json> file_requests(const std::string& file) {
    std::vector<json> out;
    for (const auto& r : hub_.log()) {
      std::string path = r["path"].get<std::string>();
      if (path.starts_with("/_cdn/") && path.ends_with("/" + file)) {
        out.push_back(r);
      }
    }
    return out;
  }

  FakeHub hub_;
};

TEST_F(ModelStoreTest, PullRegistersDownloadsAndServesAUserModel) {
  ASSERT_NO_FATAL_FAILURE(start_online());
  HttpReply r = http_post(
      port(), "/api/v1/pull",
      registration("user.tiny", "Q4_0", {{"mmproj", "mmproj-tiny-F16.gguf"}, {"reasoning", true}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json(), (json{{"status", "success"}, {"model_name", "user.tiny"}}));

  // user_models.json in Lemonade's format.
  json users = json::parse(stored_text(fs::path(env_.cache_dir()) / "user_models.json"));
  ASSERT_TRUE(users.contains("tiny")) << users.dump();
  EXPECT_EQ(users["tiny"]["checkpoint"], "org/tiny-GGUF:Q4_0");
  EXPECT_EQ(users["tiny"]["recipe"], "llamacpp");
  EXPECT_EQ(users["tiny"]["mmproj"], "mmproj-tiny-F16.gguf");
  EXPECT_EQ(users["tiny"]["labels"], (json{"custom", "reasoning"}));
  EXPECT_EQ(users["tiny"]["suggested"], true);

  expect_hub_layout(repo_dir(), commit(), {"tiny-Q4_0.gguf", "mmproj-tiny-F16.gguf"});
  HttpReply m = http_get(port(), "/api/v1/models/user.tiny");
  ASSERT_EQ(m.status, 200) << m.body;
  EXPECT_EQ(m.json()["downloaded"], true);

  HttpReply c = chat(port(), "user.tiny");
  EXPECT_EQ(c.status, 200) << c.body;
}

// The router maps libcurl (and the thirty libraries it brings) only once it
// downloads (issue #27: idle RSS).
TEST_F(ModelStoreTest, LibcurlIsLoadedOnlyForTheFirstDownload) {
  ASSERT_NO_FATAL_FAILURE(start_online());
  auto mapped = [&](const std::string& library) {
    return stored_text("/proc/" + std::to_string(router().pid()) + "/maps").find(library) !=
           std::string::npos;
  };
  ASSERT_EQ(http_get(port(), "/api/v1/health").status, 200);
  EXPECT_FALSE(mapped("libcurl")) << "an idle router maps no libcurl";
  EXPECT_FALSE(mapped("libarchive"));
  HttpReply r = http_post(port(), "/api/v1/pull", registration("user.tiny", "Q4_0"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(mapped("libcurl")) << "the download loaded it";
}

TEST_F(ModelStoreTest, StreamingPullSendsLemonadesProgressAndCompleteEvents) {
  ASSERT_NO_FATAL_FAILURE(start_online());
  SseStream s(
      port(), "/api/v1/pull",
      registration("user.tiny", "Q4_0", {{"mmproj", "mmproj-tiny-F16.gguf"}, {"stream", true}})
          .dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_EQ(s.status(), 200);
  EXPECT_EQ(s.header("content-type"), "text/event-stream");
  auto events = s.rest();
  ASSERT_TRUE(s.ended_cleanly());
  ASSERT_GE(events.size(), 2u);
  std::set<std::string> files;
  for (std::size_t i = 0; i + 1 < events.size(); ++i) {
    ASSERT_EQ(events[i].event, "progress") << events[i].data;
    json d = json::parse(events[i].data);
    for (const char* key :
         {"file", "file_index", "total_files", "bytes_downloaded", "bytes_total", "percent"}) {
      EXPECT_TRUE(d.contains(key)) << key << " in " << d.dump();
    }
    EXPECT_EQ(d["total_files"], 2);
    EXPECT_GE(d["file_index"].get<int>(), 1);
    EXPECT_LE(d["bytes_downloaded"].get<std::uint64_t>(), d["bytes_total"].get<std::uint64_t>());
    files.insert(d["file"].get<std::string>());
  }
  EXPECT_EQ(files, (std::set<std::string>{"tiny-Q4_0.gguf", "mmproj-tiny-F16.gguf"}));
  EXPECT_EQ(events.back().event, "complete");
  EXPECT_EQ(json::parse(events.back().data), (json{{"file", ""},
                                                   {"file_index", 2},
                                                   {"total_files", 2},
                                                   {"bytes_downloaded", 0},
                                                   {"bytes_total", 0},
                                                   {"percent", 100}}));
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.tiny").json()["downloaded"], true);
}

TEST_F(ModelStoreTest, OllamasPullStreamsItsStatusLinesManifestFirst) {
  // Ollama's clients, and Lemonade's tests, read "pulling manifest" first.
  hub_.add_random_file("unsloth/Qwen3-0.6B-GGUF", "Qwen3-0.6B-Q4_0.gguf", 3u << 20, 7);
  ASSERT_NO_FATAL_FAILURE(start_online());
  SseStream s(port(), "/api/pull", json{{"model", "Qwen3-0.6B-GGUF"}}.dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_EQ(s.status(), 200);
  EXPECT_EQ(s.header("content-type"), "application/x-ndjson");
  const std::string body = s.read_body();
  ASSERT_TRUE(s.ended_cleanly());
  std::vector<json> lines;
  for (std::size_t at = 0, nl; (nl = body.find('\n', at)) != std::string::npos; at = nl + 1) {
    lines.push_back(json::parse(body.substr(at, nl - at)));
  }
  ASSERT_GE(lines.size(), 3u) << body;
  EXPECT_EQ(lines.front(), (json{{"status", "pulling manifest"}}));
  for (std::size_t i = 1; i + 1 < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["status"], "pulling Qwen3-0.6B-Q4_0.gguf") << lines[i].dump();
    EXPECT_LE(lines[i]["completed"].get<std::uint64_t>(), lines[i]["total"].get<std::uint64_t>());
  }
  EXPECT_EQ(lines.back(), (json{{"status", "success"}}));
}

TEST_F(ModelStoreTest, DownloadsAreFollowedOnTheEventStream) {
  ASSERT_NO_FATAL_FAILURE(start_online());
  SseStream events(port(), "GET", "/api/v1/events", "", {});
  ASSERT_TRUE(events.read_head());
  ASSERT_EQ(http_post(port(), "/api/v1/pull", registration("user.tiny", "Q4_0")).status, 200);
  ASSERT_EQ(http_post(port(), "/api/v1/pull", registration("user.nope", "Q2_K")).status, 404);
  std::vector<json> seen;
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (std::chrono::steady_clock::now() < deadline) {
    auto e = events.next(std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now()));
    if (!e) {
      break;
    }
    if (e->data.empty()) {
      continue;  // a heartbeat
    }
    seen.push_back(json::parse(e->data));
    if (seen.back()["type"] == "download_failed") {
      break;
    }
  }
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back()["model"], "user.nope");
  EXPECT_EQ(seen.back()["code"], "remote_not_found");
  bool progress = false;
  bool complete = false;
  for (const auto& e : seen) {
    if (e["type"] == "download_progress") {
      EXPECT_FALSE(complete) << "progress after complete";
      EXPECT_EQ(e["model"], "user.tiny");
      EXPECT_EQ(e["bytes_total"], kQ4Size);
      EXPECT_LE(e["bytes_downloaded"].get<std::uint64_t>(), kQ4Size);
      progress = true;
    }
    if (e["type"] == "download_complete") {
      EXPECT_EQ(e["model"], "user.tiny");
      complete = true;
    }
  }
  EXPECT_TRUE(progress);
  EXPECT_TRUE(complete);
}

TEST_F(ModelStoreTest, ResumesAfterTheRouterIsKilledMidDownload) {
  constexpr std::uint64_t kCut = 1u << 20;
  hub_.set_knobs({{{"path", std::string(kRepo) + "/tiny-Q4_0.gguf"}, {"stall_after_bytes", kCut}}});
  ASSERT_NO_FATAL_FAILURE(start_online());
  SseStream s(port(), "/api/v1/pull", registration("user.tiny", "Q4_0", {{"stream", true}}).dump());
  ASSERT_TRUE(hub_.wait_stalled(std::string(kRepo) + "/tiny-Q4_0.gguf"));
  fs::path incomplete;
  const json listing = hub_.listing(kRepo);
  for (const auto& f : listing["siblings"]) {
    if (f["rfilename"] == "tiny-Q4_0.gguf") {
      incomplete = repo_dir() / "blobs" / (f["lfs"]["sha256"].get<std::string>() + ".incomplete");
    }
  }
  ASSERT_TRUE(eventually([&] {
    std::error_code ec;
    return fs::file_size(incomplete, ec) == kCut;
  })) << incomplete;
  EXPECT_TRUE(router().kill_and_reap().empty());

  hub_.set_knobs(json::array());
  hub_.clear_log();
  ASSERT_NO_FATAL_FAILURE(start_online());
  // Registration was kept: the name alone resumes the pull.
  HttpReply r = http_post(port(), "/api/v1/pull", json{{"model_name", "user.tiny"}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto requests = file_requests("tiny-Q4_0.gguf");
  ASSERT_EQ(requests.size(), 1u) << hub_.log().dump();
  EXPECT_EQ(requests[0]["range"], "bytes=" + std::to_string(kCut) + "-");
  EXPECT_EQ(requests[0]["status"], 206);
  expect_hub_layout(repo_dir(), commit(), {"tiny-Q4_0.gguf"});
}

TEST_F(ModelStoreTest, ACorruptFileIsFetchedOnceMoreThenTheHashMismatchFails) {
  ASSERT_NO_FATAL_FAILURE(start_online());
  const std::string file = std::string(kRepo) + "/tiny-Q8_0.gguf";
  // Corrupt once: the retry succeeds.
  hub_.set_knobs({{{"path", file}, {"corrupt", true}, {"times", 1}}});
  HttpReply ok = http_post(port(), "/api/v1/pull", registration("user.q8", "Q8_0"));
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(file_requests("tiny-Q8_0.gguf").size(), 2u);
  expect_hub_layout(repo_dir(), commit(), {"tiny-Q8_0.gguf"});

  // Corrupt every time: 502 naming the file and both hashes; nothing linked.
  hub_.set_knobs({{{"path", std::string(kRepo) + "/tiny-Q4_0.gguf"}, {"corrupt", true}}});
  HttpReply bad = http_post(port(), "/api/v1/pull", registration("user.q4", "Q4_0"));
  ASSERT_EQ(bad.status, 502) << bad.body;
  json e = bad.json();
  ASSERT_TRUE(is_error_envelope(e)) << bad.body;
  EXPECT_EQ(e["error"]["code"], "checksum_mismatch");
  std::string message = e["error"]["message"].get<std::string>();
  std::string expected;
  const json listing = hub_.listing(kRepo);
  for (const auto& f : listing["siblings"]) {
    if (f["rfilename"] == "tiny-Q4_0.gguf") {
      expected = f["lfs"]["sha256"].get<std::string>();
    }
  }
  EXPECT_NE(message.find(expected), std::string::npos) << message;
  EXPECT_FALSE(
      fs::exists(fs::symlink_status(repo_dir() / "snapshots" / commit() / "tiny-Q4_0.gguf")));
  EXPECT_FALSE(fs::exists(repo_dir() / "blobs" / expected));
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.q4").json()["downloaded"], false);
}

TEST_F(ModelStoreTest, OfflineModeNeverTouchesTheNetwork) {
  // Download one model while online; another is registered but not on disk.
  env_.add_user_model("q8", {{"checkpoint", std::string(kRepo) + ":Q8_0"}, {"recipe", "llamacpp"}});
  ASSERT_NO_FATAL_FAILURE(start_online());
  ASSERT_EQ(http_post(port(), "/api/v1/pull", registration("user.q4", "Q4_0")).status, 200);
  router().kill_and_reap();
  hub_.clear_log();

  ASSERT_NO_FATAL_FAILURE(start_online({{"LEMONADE_OFFLINE", "1"}}));
  HttpReply have = http_post(port(), "/api/v1/pull", json{{"model_name", "user.q4"}});
  EXPECT_EQ(have.status, 200) << have.body;
  for (std::string path : {"/api/v1/pull", "/api/v1/load", "/api/v1/chat/completions"}) {
    json body =
        path.ends_with("completions") ? chat_body("user.q8") : json{{"model_name", "user.q8"}};
    HttpReply r = http_post(port(), path, body);
    EXPECT_EQ(r.status, 404) << path << ": " << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "offline") << path;
    EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("offline"), std::string::npos);
  }
  EXPECT_EQ(chat(port(), "user.q4").status, 200);
  EXPECT_TRUE(hub_.log().empty()) << hub_.log().dump();
}

TEST_F(ModelStoreTest, DeleteRemovesOneVariantAndKeepsTheOtherAndTheSharedMmproj) {
  ASSERT_NO_FATAL_FAILURE(start_online());
  json mm = {{"mmproj", "mmproj-tiny-F16.gguf"}};
  ASSERT_EQ(http_post(port(), "/api/v1/pull", registration("user.q4", "Q4_0", mm)).status, 200);
  ASSERT_EQ(http_post(port(), "/api/v1/pull", registration("user.q8", "Q8_0", mm)).status, 200);
  ASSERT_NO_FATAL_FAILURE(load_ok("user.q4"));

  HttpReply r = http_post(port(), "/api/v1/delete", json{{"model_name", "user.q4"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json(), (json{{"status", "success"}, {"message", "Deleted model: user.q4"}}));
  EXPECT_TRUE(loaded_names(health(port())).empty());
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.q4").status, 404);
  json users = json::parse(stored_text(fs::path(env_.cache_dir()) / "user_models.json"));
  EXPECT_FALSE(users.contains("q4"));
  EXPECT_TRUE(users.contains("q8"));
  expect_hub_layout(repo_dir(), commit(), {"tiny-Q8_0.gguf", "mmproj-tiny-F16.gguf"});
  EXPECT_EQ(chat(port(), "user.q8").status, 200);

  // Unknown: 422 (Lemonade's status, issue #25); a built-in model that is
  // not downloaded: 422 model_not_downloaded.
  HttpReply unknown = http_post(port(), "/api/v1/delete", json{{"model_name", "nope"}});
  EXPECT_EQ(unknown.status, 422);
  EXPECT_EQ(unknown.json()["error"]["code"], "model_not_found");
  HttpReply absent = http_post(port(), "/api/v1/delete", json{{"model_name", "Qwen3-0.6B-GGUF"}});
  EXPECT_EQ(absent.status, 422) << absent.body;
  EXPECT_EQ(absent.json()["error"]["code"], "model_not_downloaded");
}

TEST_F(ModelStoreTest, FirstStreamingChatDownloadsTheModelWithKeepalives) {
  env_.add_user_model("tiny",
                      {{"checkpoint", std::string(kRepo) + ":Q4_0"}, {"recipe", "llamacpp"}});
  const std::string file = std::string(kRepo) + "/tiny-Q4_0.gguf";
  hub_.set_knobs({{{"path", file}, {"stall_after_bytes", 4096}}});
  ASSERT_NO_FATAL_FAILURE(start_router({}, hub_env()));
  EXPECT_EQ(http_get(port(), "/api/v1/models/user.tiny").json()["downloaded"], false);
  SseStream s(port(), "/api/v1/chat/completions", stream_body("user.tiny", 3, 0).dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_EQ(s.status(), 200);
  ASSERT_TRUE(hub_.wait_stalled(file));
  auto first = s.next();
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(first->is_comment()) << first->data;
  // A plain request for the same model follows the same download.
  auto plain = std::async(std::launch::async, [&] { return chat(port(), "user.tiny"); });
  hub_.set_knobs(json::array());
  auto rest = s.rest();
  ASSERT_TRUE(s.ended_cleanly());
  ASSERT_FALSE(rest.empty());
  EXPECT_TRUE(rest.back().is_done());
  EXPECT_EQ(plain.get().status, 200);
  EXPECT_EQ(file_requests("tiny-Q4_0.gguf").size(), 1u);
}

TEST_F(ModelStoreTest, TwoPullsOfOneModelShareOneDownload) {
  const std::string file = std::string(kRepo) + "/tiny-Q4_0.gguf";
  hub_.set_knobs({{{"path", file}, {"stall_after_bytes", 4096}}});
  ASSERT_NO_FATAL_FAILURE(start_online());
  SseStream first(port(), "/api/v1/pull",
                  registration("user.tiny", "Q4_0", {{"stream", true}}).dump());
  ASSERT_TRUE(hub_.wait_stalled(file));
  SseStream second(port(), "/api/v1/pull",
                   json{{"model_name", "user.tiny"}, {"stream", true}}.dump());
  ASSERT_TRUE(second.read_head());
  EXPECT_EQ(second.status(), 200);
  // The first client leaves; the download goes on for the second.
  first.disconnect();
  hub_.set_knobs(json::array());
  auto events = second.rest();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().event, "complete") << events.back().data;
  EXPECT_EQ(file_requests("tiny-Q4_0.gguf").size(), 1u) << hub_.log().dump();
}

TEST_F(ModelStoreTest, ALoneClientThatLeavesCancelsAndTheNextPullResumes) {
  const std::string file = std::string(kRepo) + "/tiny-Q4_0.gguf";
  hub_.set_knobs({{{"path", file}, {"stall_after_bytes", 65536}}});
  ASSERT_NO_FATAL_FAILURE(start_online());
  {
    SseStream s(port(), "/api/v1/pull",
                registration("user.tiny", "Q4_0", {{"stream", true}}).dump());
    ASSERT_TRUE(hub_.wait_stalled(file));
    ASSERT_TRUE(s.read_head());
    s.disconnect();
  }
  // Nobody else follows the pull: it is cancelled, and the partial file stays.
  ASSERT_TRUE(router().wait_for_log("pull user.tiny ended: cancelled"));
  EXPECT_EQ(http_post(port(), "/api/v1/delete", json{{"model_name", "user.tiny"}}).status, 200)
      << "no longer downloading";
  hub_.set_knobs(json::array());
  ASSERT_EQ(http_post(port(), "/api/v1/pull", registration("user.tiny", "Q4_0")).status, 200);
  auto resumed = file_requests("tiny-Q4_0.gguf");
  ASSERT_EQ(resumed.size(), 2u) << hub_.log().dump() << router().log_text();
  EXPECT_EQ(resumed[1]["range"], "bytes=65536-");
}

TEST_F(ModelStoreTest, DeleteWhileDownloadingIsAConflict) {
  const std::string file = std::string(kRepo) + "/tiny-Q4_0.gguf";
  hub_.set_knobs({{{"path", file}, {"stall_after_bytes", 4096}}});
  ASSERT_NO_FATAL_FAILURE(start_online());
  SseStream s(port(), "/api/v1/pull", registration("user.tiny", "Q4_0", {{"stream", true}}).dump());
  ASSERT_TRUE(hub_.wait_stalled(file));
  ASSERT_TRUE(s.read_head());
  HttpReply busy = http_post(port(), "/api/v1/delete", json{{"model_name", "user.tiny"}});
  EXPECT_EQ(busy.status, 409) << busy.body;
  EXPECT_EQ(busy.json()["error"]["code"], "conflict");
  hub_.set_knobs(json::array());
  auto events = s.rest();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().event, "complete") << events.back().data;
  EXPECT_EQ(http_post(port(), "/api/v1/delete", json{{"model_name", "user.tiny"}}).status, 200);
}

TEST_F(ModelStoreTest, HubErrorsKeepTheirMeaning) {
  hub_.set_token("org/gated", "secret");
  hub_.add_file("org/gated", "g-Q4_0.gguf", "gated weights");
  ASSERT_NO_FATAL_FAILURE(start_online());
  auto pull = [&](const json& body) { return http_post(port(), "/api/v1/pull", body); };

  HttpReply missing_repo =
      pull({{"model_name", "user.x"}, {"checkpoint", "org/none:Q4_0"}, {"recipe", "llamacpp"}});
  EXPECT_EQ(missing_repo.status, 404) << missing_repo.body;
  EXPECT_EQ(missing_repo.json()["error"]["code"], "remote_not_found");

  HttpReply missing_variant = pull(registration("user.y", "Q2_K"));
  EXPECT_EQ(missing_variant.status, 404) << missing_variant.body;
  std::string message = missing_variant.json()["error"]["message"].get<std::string>();
  EXPECT_NE(message.find("Q4_0, Q8_0"), std::string::npos) << message;

  HttpReply gated =
      pull({{"model_name", "user.g"}, {"checkpoint", "org/gated:Q4_0"}, {"recipe", "llamacpp"}});
  EXPECT_EQ(gated.status, 401) << gated.body;
  EXPECT_EQ(gated.json()["error"]["code"], "remote_unauthorized");
  EXPECT_NE(gated.json()["error"]["message"].get<std::string>().find("HF_TOKEN"),
            std::string::npos);

  HttpReply bad = pull({{"model_name", "user.z"}, {"checkpoint", "nope"}, {"recipe", "llamacpp"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.json()["error"]["param"], "checkpoint");
  HttpReply recipe =
      pull({{"model_name", "user.z"}, {"checkpoint", "org/x:Q4_0"}, {"recipe", "vllm"}});
  EXPECT_EQ(recipe.status, 400);
  EXPECT_EQ(recipe.json()["error"]["param"], "recipe");
  HttpReply name =
      pull({{"model_name", "user.../x"}, {"checkpoint", "org/x:Q4_0"}, {"recipe", "llamacpp"}});
  EXPECT_EQ(name.status, 400);
  EXPECT_EQ(name.json()["error"]["param"], "model_name");
  HttpReply unknown = pull({{"model_name", "NoSuchModel"}});
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.json()["error"]["code"], "model_not_found");
}

TEST_F(ModelStoreTest, TheTokenIsSentAndAWrongOneIsForbidden) {
  hub_.set_token("org/gated", "tok-secret-4712");
  hub_.add_file("org/gated", "g-Q4_0.gguf", "gated weights");
  ASSERT_NO_FATAL_FAILURE(start_online({{"HF_TOKEN", "tok-wrong-4711"}}));
  json body = {{"model_name", "user.g"}, {"checkpoint", "org/gated:Q4_0"}, {"recipe", "llamacpp"}};
  HttpReply wrong = http_post(port(), "/api/v1/pull", body);
  EXPECT_EQ(wrong.status, 403) << wrong.body;
  EXPECT_EQ(wrong.json()["error"]["code"], "remote_forbidden");
  EXPECT_EQ(router().log_text().find("tok-wrong-4711"), std::string::npos);
  router().kill_and_reap();

  ASSERT_NO_FATAL_FAILURE(start_online({{"HF_TOKEN", "tok-secret-4712"}}));
  HttpReply ok = http_post(port(), "/api/v1/pull", json{{"model_name", "user.g"}});
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(router().log_text().find("tok-secret-4712"), std::string::npos);
}

TEST_F(ModelStoreTest, NoSpaceNoNetworkAndEscapingNamesAreRefused) {
  ASSERT_NO_FATAL_FAILURE(start_online({{"LEMONADE_DOWNLOAD_FREE_BYTES", "1000"}}));
  HttpReply full = http_post(port(), "/api/v1/pull", registration("user.tiny", "Q4_0"));
  EXPECT_EQ(full.status, 507) << full.body;
  EXPECT_EQ(full.json()["error"]["code"], "insufficient_storage");
  EXPECT_TRUE(file_requests("tiny-Q4_0.gguf").empty());
  router().kill_and_reap();

  ASSERT_NO_FATAL_FAILURE(start_router({}, {{"HF_ENDPOINT", "http://127.0.0.1:1"}}));
  HttpReply down = http_post(port(), "/api/v1/pull", json{{"model_name", "user.tiny"}});
  EXPECT_EQ(down.status, 502) << down.body;
  EXPECT_EQ(down.json()["error"]["code"], "network_error");
  EXPECT_NE(down.json()["error"]["message"].get<std::string>().find("127.0.0.1:1"),
            std::string::npos);
  router().kill_and_reap();

  hub_.add_file("amd/onnx", "genai_config.json", "{}");
  hub_.set_knobs({{{"path", "amd/onnx"}, {"extra_siblings", {"../../escape.gguf"}}}});
  ASSERT_NO_FATAL_FAILURE(start_online());
  HttpReply escape = http_post(
      port(), "/api/v1/pull",
      json{{"model_name", "user.o"}, {"checkpoint", "amd/onnx"}, {"recipe", "ryzenai-llm"}});
  EXPECT_EQ(escape.status, 502) << escape.body;
  EXPECT_NE(escape.json()["error"]["message"].get<std::string>().find("escape"), std::string::npos);
  for (const auto& e : fs::recursive_directory_iterator(env_.root())) {
    EXPECT_NE(e.path().filename(), "escape.gguf") << e.path();
  }
}

}  // namespace
}  // namespace lemon::testing
