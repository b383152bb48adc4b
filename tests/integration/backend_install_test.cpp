// Backend installs end to end (issue #8): the real router installs
// llama.cpp's release archive from a fake GitHub (fake-hub's release route,
// LEMONADE_RELEASES_URL), verifies and swaps it in atomically, reports it,
// removes it, and installs it on a model's first load.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/fake_hub.h"
#include "support/http_client.h"
#include "support/router_fixture.h"
#include "support/sse_reader.h"

namespace lemon::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kTag = "b8175";  // resources/backend_versions.json's llamacpp:cpu pin
const std::string kAsset = std::string("llama-") + kTag + "-bin-ubuntu-x64.tar.gz";

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Entry {
  std::string name;
  std::string content;
  int mode;
};

// A tar.gz release like llama.cpp's: build/bin/llama-server (the fake) and a
// shared library beside it.
void write_release(const fs::path& path, const std::vector<Entry>& extra = {}) {
  fs::create_directories(path.parent_path());
  std::vector<Entry> entries = {
      {"build/bin/llama-server", read_text(fake_bin("llama-server")), 0755},
      {"build/bin/libggml-base.so", "not really a library", 0644}};
  entries.insert(entries.end(), extra.begin(), extra.end());
  archive* a = archive_write_new();
  archive_write_add_filter_gzip(a);
  archive_write_set_format_pax_restricted(a);
  ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK);
  for (const auto& e : entries) {
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, e.name.c_str());
    archive_entry_set_filetype(entry, AE_IFREG);
    archive_entry_set_perm(entry, static_cast<__LA_MODE_T>(e.mode));
    archive_entry_set_size(entry, static_cast<la_int64_t>(e.content.size()));
    archive_write_header(a, entry);
    archive_write_data(a, e.content.data(), e.content.size());
    archive_entry_free(entry);
  }
  archive_write_close(a);
  archive_write_free(a);
}

class BackendInstallTest : public RouterTest {
 protected:
  void SetUp() override {
    write_release(release_path(kTag));
    ASSERT_TRUE(hub_.start());
  }

  fs::path release_path(const std::string& tag) const {
    return fs::path(hub_.root()) / "_releases" / "ggml-org" / "llama.cpp" / tag /
           ("llama-" + tag + "-bin-ubuntu-x64.tar.gz");
  }
  fs::path install_dir() const { return fs::path(env_.cache_dir()) / "bin" / "llamacpp" / "cpu"; }

  // No llama-server anywhere: the environment's override is cleared.
  void start(std::map<std::string, std::string> extra = {}) {
    extra["LEMONADE_LLAMACPP_CPU_BIN"] = "";
    extra["LEMONADE_RELEASES_URL"] = hub_.endpoint();
    ASSERT_NO_FATAL_FAILURE(start_router({}, extra));
  }

  int asset_requests() {
    int n = 0;
    for (const auto& r : hub_.log()) {
      if (r["path"].get<std::string>().find("/releases/download/") != std::string::npos) {
        ++n;
      }
    }
    return n;
  }

  HttpReply install(json extra = json::object()) {
    json body = {{"recipe", "llamacpp"}, {"backend", "cpu"}};
    body.update(extra);
    return http_post(port(), "/api/v1/install", body);
  }

  FakeHub hub_;
};

TEST_F(BackendInstallTest, InstallsVerifiesAndThenIsANoOp) {
  ASSERT_NO_FATAL_FAILURE(start());
  HttpReply r = install();
  ASSERT_EQ(r.status, 200) << r.body << router().log_text();
  EXPECT_EQ(r.json(), (json{{"status", "success"}, {"recipe", "llamacpp"}, {"backend", "cpu"}}));
  EXPECT_EQ(read_text(install_dir() / "version.txt"), kTag);
  fs::path exe = install_dir() / "build" / "bin" / "llama-server";
  ASSERT_TRUE(fs::exists(exe));
  EXPECT_NE(fs::status(exe).permissions() & fs::perms::owner_exec, fs::perms::none);
  EXPECT_TRUE(fs::exists(install_dir() / "build" / "bin" / "libggml-base.so"));
  EXPECT_EQ(asset_requests(), 1);
  // Nothing but the install is left beside it (no staging folder, no archive).
  for (const auto& e : fs::directory_iterator(install_dir().parent_path())) {
    EXPECT_EQ(e.path().filename(), "cpu") << e.path();
  }

  HttpReply again = install();
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(asset_requests(), 1) << "already installed at the pinned version";
}

TEST_F(BackendInstallTest, StreamingInstallSendsProgressThenComplete) {
  ASSERT_NO_FATAL_FAILURE(start());
  SseStream s(port(), "/api/v1/install",
              json{{"recipe", "llamacpp"}, {"backend", "cpu"}, {"stream", true}}.dump());
  ASSERT_TRUE(s.read_head());
  ASSERT_EQ(s.status(), 200);
  auto events = s.rest();
  ASSERT_TRUE(s.ended_cleanly());
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.front().event, "progress");
  EXPECT_EQ(json::parse(events.front().data)["file"], kAsset);
  EXPECT_EQ(events.back().event, "complete");
  EXPECT_TRUE(fs::exists(install_dir() / "version.txt"));
}

TEST_F(BackendInstallTest, UninstallRemovesItAndIsASuccessWhenNothingIsThere) {
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_EQ(install().status, 200);
  HttpReply r =
      http_post(port(), "/api/v1/uninstall", json{{"recipe", "llamacpp"}, {"backend", "cpu"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json(), (json{{"status", "success"}, {"recipe", "llamacpp"}, {"backend", "cpu"}}));
  EXPECT_FALSE(fs::exists(install_dir()));
  HttpReply again =
      http_post(port(), "/api/v1/uninstall", json{{"recipe", "llamacpp"}, {"backend", "cpu"}});
  EXPECT_EQ(again.status, 200) << again.body;
  // Reinstall works.
  EXPECT_EQ(install().status, 200);
  EXPECT_TRUE(fs::exists(install_dir() / "version.txt"));
}

TEST_F(BackendInstallTest, BadFieldsAreNamed) {
  ASSERT_NO_FATAL_FAILURE(start());
  struct Case {
    json body;
    const char* param;
  } cases[] = {
      {{{"backend", "cpu"}}, "recipe"},
      {{{"recipe", "llamacpp"}}, "backend"},
      {{{"recipe", "vllm"}, {"backend", "cpu"}}, "recipe"},
      {{{"recipe", "llamacpp"}, {"backend", "cuda"}}, "backend"},
  };
  for (const auto& c : cases) {
    HttpReply r = http_post(port(), "/api/v1/install", c.body);
    EXPECT_EQ(r.status, 400) << c.body.dump() << " " << r.body;
    EXPECT_EQ(r.json()["error"]["param"], c.param) << c.body.dump();
  }
  HttpReply metal = install({{"backend", "metal"}});
  EXPECT_EQ(metal.status, 400) << metal.body;
  EXPECT_EQ(metal.json()["error"]["code"], "unsupported_operation");
}

TEST_F(BackendInstallTest, TheFirstLoadInstallsTheBackend) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start());
  HttpReply c = chat(port(), "user.a");
  ASSERT_EQ(c.status, 200) << c.body << router().log_text();
  EXPECT_EQ(asset_requests(), 1);
  EXPECT_EQ(read_text(install_dir() / "version.txt"), kTag);
}

TEST_F(BackendInstallTest, OfflineRefusesAndNamesTheInstallCommand) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start({{"LEMONADE_OFFLINE", "1"}}));
  for (const auto& [path, body] :
       {std::pair{"/api/v1/install", json{{"recipe", "llamacpp"}, {"backend", "cpu"}}},
        std::pair{"/api/v1/load", json{{"model_name", "user.a"}}}}) {
    HttpReply r = http_post(port(), path, body);
    EXPECT_EQ(r.status, 404) << path << " " << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "offline") << path;
    EXPECT_NE(r.json()["error"]["message"].get<std::string>().find(
                  "lemonade-server recipes --install llamacpp:cpu"),
              std::string::npos)
        << r.body;
  }
  EXPECT_EQ(asset_requests(), 0);
}

TEST_F(BackendInstallTest, TheEnvironmentOverrideCountsAsInstalled) {
  ASSERT_NO_FATAL_FAILURE(
      start_router({}, {{"LEMONADE_RELEASES_URL", hub_.endpoint()}}));  // the fake via the variable
  EXPECT_EQ(install().status, 200);
  EXPECT_EQ(asset_requests(), 0);
  EXPECT_FALSE(fs::exists(install_dir()));
}

TEST_F(BackendInstallTest, AnArchiveThatEscapesIsRefusedAndTheOldInstallStays) {
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_EQ(install().status, 200);
  // Pin another version whose archive holds a path-escaping entry.
  write_release(release_path("b9999"), {{"../../../evil.sh", "#!/bin/sh\n", 0755}});
  json versions =
      json::parse(read_text(fs::path(LEMON_SOURCE_DIR) / "resources" / "backend_versions.json"));
  versions["llamacpp"]["cpu"] = "b9999";
  std::ofstream(fs::path(env_.cache_dir()) / "backend_versions.json") << versions.dump();
  HttpReply r = install();
  EXPECT_EQ(r.status, 502) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "invalid_archive");
  EXPECT_EQ(read_text(install_dir() / "version.txt"), kTag) << "the old install is untouched";
  for (const auto& e : fs::recursive_directory_iterator(env_.root())) {
    EXPECT_NE(e.path().filename(), "evil.sh") << e.path();
  }
}

TEST_F(BackendInstallTest, AKilledUpgradeLeavesTheOldInstallUsable) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_EQ(install().status, 200);
  write_release(release_path("b9999"));
  json versions =
      json::parse(read_text(fs::path(LEMON_SOURCE_DIR) / "resources" / "backend_versions.json"));
  versions["llamacpp"]["cpu"] = "b9999";
  std::ofstream(fs::path(env_.cache_dir()) / "backend_versions.json") << versions.dump();
  const std::string asset_path = "ggml-org/llama.cpp/b9999/llama-b9999-bin-ubuntu-x64.tar.gz";
  hub_.set_knobs({{{"path", asset_path}, {"stall_after_bytes", 1000}}});
  SseStream s(port(), "/api/v1/install",
              json{{"recipe", "llamacpp"}, {"backend", "cpu"}, {"stream", true}}.dump());
  ASSERT_TRUE(hub_.wait_stalled(asset_path));
  EXPECT_TRUE(router().kill_and_reap().empty());
  hub_.set_knobs(json::array());

  // The old version is still installed and serves.
  EXPECT_EQ(read_text(install_dir() / "version.txt"), kTag);
  ASSERT_NO_FATAL_FAILURE(start());
  EXPECT_EQ(chat(port(), "user.a").status, 200);
  // The upgrade resumes and swaps the new version in.
  HttpReply r = install();
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(read_text(install_dir() / "version.txt"), "b9999");
}

TEST_F(BackendInstallTest, SystemInfoFollowsTheInstall) {
  ASSERT_NO_FATAL_FAILURE(start());
  auto cpu_state = [&] {
    return http_get(port(), "/api/v1/system-info").json()["recipes"]["llamacpp"]["backends"]["cpu"];
  };
  json before = cpu_state();
  EXPECT_EQ(before["state"], "installable") << before.dump();
  EXPECT_EQ(before["action"], "lemonade-server recipes --install llamacpp:cpu");
  EXPECT_EQ(before["release_url"],
            hub_.endpoint() + "/ggml-org/llama.cpp/releases/download/" + kTag + "/" + kAsset);
  ASSERT_EQ(install().status, 200);
  json after = cpu_state();
  EXPECT_EQ(after["state"], "installed") << after.dump();
  EXPECT_EQ(after["version"], kTag);
  EXPECT_EQ(after["message"], "");
  // A new pin in the cache folder makes it out of date.
  json versions =
      json::parse(read_text(fs::path(LEMON_SOURCE_DIR) / "resources" / "backend_versions.json"));
  versions["llamacpp"]["cpu"] = "b9999";
  std::ofstream(fs::path(env_.cache_dir()) / "backend_versions.json") << versions.dump();
  json outdated = cpu_state();
  EXPECT_EQ(outdated["state"], "update_required") << outdated.dump();
  EXPECT_EQ(outdated["version"], kTag);
}

TEST_F(BackendInstallTest, TwoInstallsShareOneDownload) {
  const std::string asset_path = std::string("ggml-org/llama.cpp/") + kTag + "/" + kAsset;
  hub_.set_knobs({{{"path", asset_path}, {"stall_after_bytes", 1000}}});
  ASSERT_NO_FATAL_FAILURE(start());
  const std::string body =
      json{{"recipe", "llamacpp"}, {"backend", "cpu"}, {"stream", true}}.dump();
  SseStream first(port(), "/api/v1/install", body);
  ASSERT_TRUE(hub_.wait_stalled(asset_path));
  SseStream second(port(), "/api/v1/install", body);
  ASSERT_TRUE(second.read_head());
  hub_.set_knobs(json::array());
  ASSERT_TRUE(first.read_head());
  auto a = first.rest();
  auto b = second.rest();
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  EXPECT_EQ(a.back().event, "complete");
  EXPECT_EQ(b.back().event, "complete");
  EXPECT_EQ(asset_requests(), 1);
}

TEST_F(BackendInstallTest, UninstallUnloadsTheModelsThatUseIt) {
  env_.add_llm("a");
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_EQ(install().status, 200);
  ASSERT_NO_FATAL_FAILURE(load_ok("user.a"));
  HttpReply r =
      http_post(port(), "/api/v1/uninstall", json{{"recipe", "llamacpp"}, {"backend", "cpu"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(loaded_names(health(port())).empty());
  EXPECT_FALSE(fs::exists(install_dir()));
}

TEST_F(BackendInstallTest, ReleaseServerFaultsAreTypedOrRecovered) {
  ASSERT_NO_FATAL_FAILURE(start());
  const std::string asset_path = std::string("ggml-org/llama.cpp/") + kTag + "/" + kAsset;
  // A 404 from the release server.
  hub_.set_knobs({{{"path", asset_path}, {"status", 404}}});
  HttpReply missing = install();
  EXPECT_EQ(missing.status, 404) << missing.body;
  EXPECT_EQ(missing.json()["error"]["code"], "remote_not_found");
  // A connection dropped mid-file: resumed, and the install succeeds.
  hub_.set_knobs({{{"path", asset_path}, {"drop_after_bytes", 2000}, {"times", 1}}});
  hub_.clear_log();
  HttpReply dropped = install();
  ASSERT_EQ(dropped.status, 200) << dropped.body;
  auto log = hub_.log();
  ASSERT_EQ(asset_requests(), 2) << log.dump();
  EXPECT_EQ(log.back()["range"], "bytes=2000-");
  // A truncated archive (the server sends what it has: half a file).
  ASSERT_EQ(http_post(port(), "/api/v1/uninstall", json{{"recipe", "llamacpp"}, {"backend", "cpu"}})
                .status,
            200);
  std::string whole = read_text(release_path(kTag));
  std::ofstream(release_path(kTag), std::ios::binary | std::ios::trunc)
      << whole.substr(0, whole.size() / 2);
  HttpReply truncated = install();
  EXPECT_EQ(truncated.status, 502) << truncated.body;
  EXPECT_EQ(truncated.json()["error"]["code"], "invalid_archive");
  EXPECT_FALSE(fs::exists(install_dir()));
}

TEST_F(BackendInstallTest, AKillDuringAnUpgradeLeavesOneWholeInstall) {
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_EQ(install().status, 200);
  // A large new release, so that unpacking takes a while.
  std::string big(48u << 20, '\0');
  for (std::size_t i = 0; i < big.size(); i += 64) {
    big[i] = static_cast<char>(i >> 6);
  }
  write_release(release_path("b9999"), {{"build/bin/ggml-weights.bin", big, 0644}});
  json versions =
      json::parse(read_text(fs::path(LEMON_SOURCE_DIR) / "resources" / "backend_versions.json"));
  versions["llamacpp"]["cpu"] = "b9999";
  std::ofstream(fs::path(env_.cache_dir()) / "backend_versions.json") << versions.dump();
  SseStream s(port(), "/api/v1/install",
              json{{"recipe", "llamacpp"}, {"backend", "cpu"}, {"stream", true}}.dump());
  // Kill the router as soon as it starts unpacking (or later: either way the
  // folder must hold one whole install).
  ASSERT_TRUE(eventually(
      [&] {
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(install_dir().parent_path(), ec)) {
          if (e.path().filename().string().starts_with(".cpu.staging-")) {
            return true;
          }
        }
        return fs::exists(install_dir() / "build" / "bin" / "ggml-weights.bin");
      },
      kWait));
  EXPECT_TRUE(router().kill_and_reap().empty());
  const std::string version = read_text(install_dir() / "version.txt");
  EXPECT_TRUE(version == kTag || version == "b9999") << version;
  EXPECT_TRUE(fs::exists(install_dir() / "build" / "bin" / "llama-server"));
  EXPECT_EQ(version == "b9999", fs::exists(install_dir() / "build" / "bin" / "ggml-weights.bin"));
  // The next install finishes the upgrade and clears the leftovers.
  ASSERT_NO_FATAL_FAILURE(start());
  ASSERT_EQ(install().status, 200);
  EXPECT_EQ(read_text(install_dir() / "version.txt"), "b9999");
  for (const auto& e : fs::directory_iterator(install_dir().parent_path())) {
    EXPECT_EQ(e.path().filename(), "cpu") << e.path();
  }
}

}  // namespace
}  // namespace lemon::testing
