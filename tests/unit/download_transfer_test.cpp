#include "lemon/download/transfer.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>

#include "support/gate.h"
#include "support/scoped_env.h"
#include "support/temp_dir.h"

namespace lemon::download {
namespace {

namespace fs = std::filesystem;
using lemon::testing::Gate;
using namespace std::chrono_literals;

std::string downloaded_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void write_file(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << content;
}

std::string sha256(const std::string& data) {
  Hasher h(Checksum::Kind::kSha256, data.size());
  h.update(data.data(), data.size());
  return h.finish();
}

// One request as the server saw it.
struct Hit {
  std::string path;
  std::string range;
  std::string auth;
  std::string host;
};

// Restores the process-wide transfer limit.
struct SlotLimit {
  explicit SlotLimit(int n) { set_max_concurrent_transfers(n); }
  ~SlotLimit() { set_max_concurrent_transfers(4); }
};

constexpr std::size_t kBreakAt = 3000;  // bytes /flaky sends before dropping the connection

class DownloadTransferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (std::size_t i = 0; i < std::size_t{200} * 1024; ++i) {
      content_ += static_cast<char>((i * 2654435761u >> 13) & 0xff);
    }
    corrupt_ = content_;
    corrupt_[corrupt_.size() / 2] ^= 0x5a;

    auto serve = [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(content_, "application/octet-stream");
    };
    server_.Get("/file", serve);
    server_.Get("/corrupt", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(corrupt_, "application/octet-stream");
    });
    auto fail_with = [](int status) {
      return [status](const httplib::Request&, httplib::Response& res) {
        res.status = status;
        res.set_content("an error page that must never land in the file", "text/plain");
      };
    };
    server_.Get("/missing", fail_with(404));
    server_.Get("/gone", fail_with(410));
    server_.Get("/gated", fail_with(401));
    server_.Get("/forbidden", fail_with(403));
    server_.Get("/boom", fail_with(500));
    server_.Get("/redirect", [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("/file", 302);
    });
    server_.Get("/redirect-other-host", [this](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("http://localhost:" + std::to_string(port_) + "/file", 302);
    });
    // The first request breaks off after kBreakAt bytes; later ones serve the file.
    server_.Get("/flaky", [this, serve](const httplib::Request& req, httplib::Response& res) {
      if (flaky_hits_++ > 0) {
        serve(req, res);
        return;
      }
      res.set_content_provider(content_.size(), "application/octet-stream",
                               [this](std::size_t, std::size_t, httplib::DataSink& sink) {
                                 sink.write(content_.data(), kBreakAt);
                                 return false;  // drops the connection
                               });
    });
    // Always the whole file with 200, whatever the Range header says.
    server_.Get("/ignore-range", [this](const httplib::Request&, httplib::Response& res) {
      res.status = 200;
      res.set_chunked_content_provider("application/octet-stream",
                                       [this](std::size_t, httplib::DataSink& sink) {
                                         sink.write(content_.data(), content_.size());
                                         sink.done();
                                         return true;
                                       });
    });
    // 416 to any Range request, the file otherwise.
    server_.Get("/range-416", [serve](const httplib::Request& req, httplib::Response& res) {
      if (req.has_header("Range")) {
        res.status = 416;
        return;
      }
      serve(req, res);
    });
    // One byte, then nothing until the test ends.
    server_.Get("/stall", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content_provider(content_.size(), "application/octet-stream",
                               [this](std::size_t, std::size_t, httplib::DataSink& sink) {
                                 sink.write(content_.data(), 1);
                                 stall_sent_.open();
                                 release_.wait(30s);
                                 return false;
                               });
    });
    server_.Get("/text", [](const httplib::Request&, httplib::Response& res) {
      res.set_content(R"({"ok":true})", "application/json");
    });
    server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response&) {
      std::lock_guard lock(mu_);
      hits_.push_back({req.path, req.get_header_value("Range"),
                       req.get_header_value("Authorization"), req.get_header_value("Host")});
      return httplib::Server::HandlerResponse::Unhandled;
    });

    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() is a no-op until the accept loop runs.
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!server_.is_running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    ASSERT_TRUE(server_.is_running());
  }

  void TearDown() override {
    release_.open();
    server_.stop();
    if (thread_.joinable()) {
      thread_.join();
    }
  }

  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }

  FileRequest request(const std::string& path) const {
    FileRequest r;
    r.url = url(path);
    r.partial_path = dir_.path() / "incomplete" / "model.bin.part";
    r.final_path = dir_.path() / "blobs" / "model.bin";
    r.expected_size = content_.size();
    r.checksum = {Checksum::Kind::kSha256, sha256(content_)};
    return r;
  }

  static TransferOptions options() {
    TransferOptions o;
    o.connect_timeout = 5s;
    o.max_attempts = 3;
    return o;
  }

  std::vector<Hit> hits() const {
    std::lock_guard lock(mu_);
    return hits_;
  }
  std::vector<Hit> hits_for(const std::string& path) const {
    std::vector<Hit> out;
    for (auto& h : hits()) {
      if (h.path == path) {
        out.push_back(h);
      }
    }
    return out;
  }

  lemon::testing::TempDir dir_{"lemon-transfer"};
  std::string content_;
  std::string corrupt_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> flaky_hits_{0};
  Gate stall_sent_;
  Gate release_;
  mutable std::mutex mu_;
  std::vector<Hit> hits_;  // guarded by mu_
};

const CancelledFn kNever = [] { return false; };

void expect_complete(const FileRequest& r, const std::string& content) {
  EXPECT_FALSE(fs::exists(r.partial_path));
  ASSERT_TRUE(fs::exists(r.final_path));
  EXPECT_EQ(fs::file_size(r.final_path), content.size());
  EXPECT_TRUE(downloaded_text(r.final_path) == content);
}

TEST_F(DownloadTransferTest, DownloadsVerifiesAndReportsProgress) {
  FileRequest r = request("/file");
  std::vector<FileProgress> progress;
  Status s = fetch_file(
      r, options(), [&](const FileProgress& p) { progress.push_back(p); }, kNever);
  ASSERT_TRUE(s.ok()) << s.error().message();
  expect_complete(r, content_);
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back().bytes_done, content_.size());
  EXPECT_EQ(progress.back().bytes_total, content_.size());
  for (std::size_t i = 1; i < progress.size(); ++i) {
    EXPECT_LE(progress[i - 1].bytes_done, progress[i].bytes_done);
  }
  auto seen = hits_for("/file");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].range, "");
  EXPECT_EQ(seen[0].auth, "");
}

TEST_F(DownloadTransferTest, GitBlobSha1WithoutKnownSize) {
  FileRequest r = request("/file");
  r.expected_size.reset();
  auto hashed = [&] {
    lemon::testing::TempDir tmp;
    return hash_file(tmp.write("x", content_), Checksum::Kind::kGitBlobSha1);
  }();
  ASSERT_TRUE(hashed.ok());
  r.checksum = {Checksum::Kind::kGitBlobSha1, *hashed};
  std::vector<FileProgress> progress;
  Status s = fetch_file(
      r, options(), [&](const FileProgress& p) { progress.push_back(p); }, kNever);
  ASSERT_TRUE(s.ok()) << s.error().message();
  expect_complete(r, content_);
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back().bytes_total, content_.size());  // from Content-Length
}

TEST_F(DownloadTransferTest, HttpStatusesMapToErrors) {
  struct Case {
    std::string path;
    ErrorCode code;
  };
  for (const Case& c :
       {Case{"/missing", ErrorCode::kRemoteNotFound}, Case{"/gone", ErrorCode::kRemoteNotFound},
        Case{"/gated", ErrorCode::kRemoteUnauthorized},
        Case{"/forbidden", ErrorCode::kRemoteForbidden}}) {
    FileRequest r = request(c.path);
    r.bearer_token = "hf_secret_token";
    Status s = fetch_file(r, options(), nullptr, kNever);
    ASSERT_FALSE(s.ok()) << c.path;
    EXPECT_EQ(s.error().code(), c.code) << c.path << ": " << s.error().message();
    EXPECT_EQ(s.error().message().find("hf_secret_token"), std::string::npos);
    EXPECT_NE(s.error().message().find(host()), std::string::npos) << s.error().message();
    EXPECT_FALSE(fs::exists(r.partial_path)) << c.path;
    EXPECT_FALSE(fs::exists(r.final_path)) << c.path;
    // Not retried.
    EXPECT_EQ(hits_for(c.path).size(), 1u) << c.path;
  }
}

TEST_F(DownloadTransferTest, ServerErrorIsRetriedNetworkError) {
  FileRequest r = request("/boom");
  r.url += "?X-Amz-Signature=sig123";
  TransferOptions o = options();
  o.max_attempts = 2;
  Status s = fetch_file(r, o, nullptr, kNever);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kNetworkError);
  const std::string& m = s.error().message();
  EXPECT_NE(m.find(host() + " answered HTTP 500"), std::string::npos) << m;
  EXPECT_EQ(m.find("sig123"), std::string::npos) << m;
  EXPECT_EQ(hits_for("/boom").size(), 2u);
  EXPECT_FALSE(fs::exists(r.partial_path));
  EXPECT_FALSE(fs::exists(r.final_path));
}

TEST_F(DownloadTransferTest, FollowsRedirectKeepingTokenOnSameHost) {
  FileRequest r = request("/redirect");
  r.bearer_token = "tok";
  Status s = fetch_file(r, options(), nullptr, kNever);
  ASSERT_TRUE(s.ok()) << s.error().message();
  expect_complete(r, content_);
  auto all = hits();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].path, "/redirect");
  EXPECT_EQ(all[0].auth, "Bearer tok");
  EXPECT_EQ(all[1].path, "/file");
  EXPECT_EQ(all[1].auth, "Bearer tok");
}

TEST_F(DownloadTransferTest, TokenIsNotSentToAnotherHost) {
  FileRequest r = request("/redirect-other-host");
  r.bearer_token = "tok";
  Status s = fetch_file(r, options(), nullptr, kNever);
  ASSERT_TRUE(s.ok()) << s.error().message();
  expect_complete(r, content_);
  auto all = hits();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].auth, "Bearer tok");
  EXPECT_EQ(all[1].path, "/file");
  EXPECT_EQ(all[1].host, "localhost:" + std::to_string(port_));
  EXPECT_EQ(all[1].auth, "");
}

TEST_F(DownloadTransferTest, BrokenConnectionIsResumed) {
  FileRequest r = request("/flaky");
  Status s = fetch_file(r, options(), nullptr, kNever);
  ASSERT_TRUE(s.ok()) << s.error().message();
  expect_complete(r, content_);
  auto seen = hits_for("/flaky");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].range, "");
  EXPECT_EQ(seen[1].range, "bytes=" + std::to_string(kBreakAt) + "-");
}

TEST_F(DownloadTransferTest, ResumesFromExistingPartial) {
  FileRequest r = request("/file");
  constexpr std::size_t kHave = 12345;
  write_file(r.partial_path, content_.substr(0, kHave));
  std::vector<FileProgress> progress;
  Status s = fetch_file(
      r, options(), [&](const FileProgress& p) { progress.push_back(p); }, kNever);
  ASSERT_TRUE(s.ok()) << s.error().message();
  expect_complete(r, content_);
  auto seen = hits_for("/file");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].range, "bytes=" + std::to_string(kHave) + "-");
  ASSERT_FALSE(progress.empty());
  EXPECT_GE(progress.front().bytes_done, kHave);
}

TEST_F(DownloadTransferTest, ResumedPrefixCountsInChecksum) {
  FileRequest r = request("/file");
  // A wrong prefix: the server sends the right rest, the whole file mismatches.
  write_file(r.partial_path, std::string(100, 'x'));
  Status s = fetch_file(r, options(), nullptr, kNever);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kChecksumMismatch);
  EXPECT_FALSE(fs::exists(r.partial_path));
  EXPECT_FALSE(fs::exists(r.final_path));
}

TEST_F(DownloadTransferTest, ServerIgnoringRangeRestartsFile) {
  FileRequest r = request("/ignore-range");
  write_file(r.partial_path, std::string(5000, 'x'));  // discarded on the 200
  Status s = fetch_file(r, options(), nullptr, kNever);
  ASSERT_TRUE(s.ok()) << s.error().message();
  expect_complete(r, content_);
  auto seen = hits_for("/ignore-range");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].range, "bytes=5000-");
}

TEST_F(DownloadTransferTest, RangeNotSatisfiableRestartsFromZero) {
  FileRequest r = request("/range-416");
  r.expected_size.reset();
  write_file(r.partial_path, content_.substr(0, 777));
  Status s = fetch_file(r, options(), nullptr, kNever);
  ASSERT_TRUE(s.ok()) << s.error().message();
  expect_complete(r, content_);
  auto seen = hits_for("/range-416");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].range, "bytes=777-");
  EXPECT_EQ(seen[1].range, "");
}

TEST_F(DownloadTransferTest, CompletePartialIsVerifiedWithoutNetwork) {
  FileRequest r = request("/file");
  write_file(r.partial_path, content_);
  std::vector<FileProgress> progress;
  Status s = fetch_file(
      r, options(), [&](const FileProgress& p) { progress.push_back(p); }, kNever);
  ASSERT_TRUE(s.ok()) << s.error().message();
  expect_complete(r, content_);
  EXPECT_TRUE(hits().empty());
  ASSERT_EQ(progress.size(), 1u);
  EXPECT_EQ(progress[0].bytes_done, content_.size());
}

TEST_F(DownloadTransferTest, CompleteButWrongPartialIsFetchedAgain) {
  FileRequest r = request("/file");
  write_file(r.partial_path, corrupt_);
  Status s = fetch_file(r, options(), nullptr, kNever);
  ASSERT_TRUE(s.ok()) << s.error().message();
  expect_complete(r, content_);
  auto seen = hits_for("/file");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].range, "");
}

TEST_F(DownloadTransferTest, OversizePartialIsDiscarded) {
  FileRequest r = request("/file");
  write_file(r.partial_path, content_ + "trailing junk");
  Status s = fetch_file(r, options(), nullptr, kNever);
  ASSERT_TRUE(s.ok()) << s.error().message();
  expect_complete(r, content_);
  auto seen = hits_for("/file");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].range, "");
}

TEST_F(DownloadTransferTest, ChecksumMismatchDeletesPartial) {
  FileRequest r = request("/corrupt");
  Status s = fetch_file(r, options(), nullptr, kNever);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kChecksumMismatch);
  const std::string& m = s.error().message();
  EXPECT_NE(m.find("model.bin"), std::string::npos) << m;
  EXPECT_NE(m.find(sha256(content_)), std::string::npos) << m;
  EXPECT_NE(m.find(sha256(corrupt_)), std::string::npos) << m;
  EXPECT_FALSE(fs::exists(r.partial_path));
  EXPECT_FALSE(fs::exists(r.final_path));
  EXPECT_EQ(hits_for("/corrupt").size(), 1u);  // not retried
}

TEST_F(DownloadTransferTest, ShortBodyIsNetworkError) {
  FileRequest r = request("/file");
  r.expected_size = content_.size() + 10;
  TransferOptions o = options();
  o.max_attempts = 1;
  Status s = fetch_file(r, o, nullptr, kNever);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kNetworkError);
  EXPECT_FALSE(fs::exists(r.final_path));
}

TEST_F(DownloadTransferTest, CancelKeepsPartial) {
  FileRequest r = request("/stall");
  std::atomic<bool> got_bytes{false};
  Status s = fetch_file(
      r, options(),
      [&](const FileProgress& p) {
        if (p.bytes_done > 0) {
          got_bytes = true;
        }
      },
      [&] { return got_bytes.load(); });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kCancelled) << s.error().message();
  ASSERT_TRUE(fs::exists(r.partial_path));
  EXPECT_EQ(fs::file_size(r.partial_path), 1u);
  EXPECT_FALSE(fs::exists(r.final_path));
  EXPECT_EQ(hits_for("/stall").size(), 1u);
}

TEST_F(DownloadTransferTest, StallTimesOut) {
  FileRequest r = request("/stall");
  TransferOptions o = options();
  o.stall_timeout = 1s;
  o.max_attempts = 1;
  Status s = fetch_file(r, o, nullptr, kNever);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kNetworkError);
  EXPECT_NE(s.error().message().find(host()), std::string::npos) << s.error().message();
  EXPECT_TRUE(fs::exists(r.partial_path));  // the byte that came is kept
  EXPECT_FALSE(fs::exists(r.final_path));
}

TEST_F(DownloadTransferTest, WaitForTransferSlotIsCancellable) {
  SlotLimit limit(1);
  std::atomic<bool> cancel_first{false};
  Status first = ok_status();
  FileRequest r1 = request("/stall");
  std::thread t(
      [&] { first = fetch_file(r1, options(), nullptr, [&] { return cancel_first.load(); }); });
  ASSERT_TRUE(stall_sent_.wait());
  // The one slot is taken: the second transfer waits, polling its cancel
  // function; it gives up on the second poll without touching the network.
  FileRequest r2 = request("/file");
  r2.partial_path = dir_.path() / "other.part";
  r2.final_path = dir_.path() / "other";
  std::atomic<int> polls{0};
  Status second = fetch_file(r2, options(), nullptr, [&] { return ++polls >= 2; });
  cancel_first = true;
  t.join();
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code(), ErrorCode::kCancelled);
  EXPECT_TRUE(hits_for("/file").empty());
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.error().code(), ErrorCode::kCancelled);
}

TEST_F(DownloadTransferTest, ConnectionRefusedNamesHost) {
  // A bound socket that never listens: connecting to it is refused.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string dead = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  FileRequest r = request("/file");
  r.url = "http://" + dead + "/file";
  TransferOptions o = options();
  o.max_attempts = 2;
  Status s = fetch_file(r, o, nullptr, kNever);
  ::close(fd);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kNetworkError);
  EXPECT_NE(s.error().message().find(dead), std::string::npos) << s.error().message();
  EXPECT_FALSE(fs::exists(r.partial_path));
}

TEST_F(DownloadTransferTest, FetchText) {
  auto body = fetch_text(url("/text"), "tok", options(), kNever);
  ASSERT_TRUE(body.ok()) << body.error().message();
  EXPECT_EQ(*body, R"({"ok":true})");
  EXPECT_EQ(hits_for("/text")[0].auth, "Bearer tok");

  auto missing = fetch_text(url("/missing"), "", options(), kNever);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kRemoteNotFound);

  auto gated = fetch_text(url("/gated"), "", options(), kNever);
  ASSERT_FALSE(gated.ok());
  EXPECT_EQ(gated.error().code(), ErrorCode::kRemoteUnauthorized);

  auto too_big = fetch_text(url("/file"), "", options(), kNever, 1000);
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.error().code(), ErrorCode::kNetworkError);
}

TEST_F(DownloadTransferTest, FetchTextRetriesServerErrors) {
  TransferOptions o = options();
  o.max_attempts = 2;
  auto r = fetch_text(url("/boom"), "", o, kNever);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNetworkError);
  EXPECT_EQ(hits_for("/boom").size(), 2u);
}

TEST(DownloadTransfer, UrlHost) {
  EXPECT_EQ(url_host("https://huggingface.co/org/repo/resolve/main/x.gguf?download=1"),
            "huggingface.co");
  EXPECT_EQ(url_host("http://127.0.0.1:8080/x"), "127.0.0.1:8080");
  EXPECT_EQ(url_host("not a url"), "");
}

TEST(DownloadTransfer, OptionsFromEnvironment) {
  lemon::testing::ScopedEnv env;
  ASSERT_TRUE(env.set("LEMONADE_DOWNLOAD_STALL_TIMEOUT", "2.5"));
  ASSERT_TRUE(env.set("LEMONADE_DOWNLOAD_CONNECT_TIMEOUT", "7"));
  TransferOptions o = TransferOptions::from_environment();
  EXPECT_EQ(o.stall_timeout, 2500ms);
  EXPECT_EQ(o.connect_timeout, 7000ms);

  ASSERT_TRUE(env.set("LEMONADE_DOWNLOAD_STALL_TIMEOUT", "soon"));
  ASSERT_TRUE(env.set("LEMONADE_DOWNLOAD_CONNECT_TIMEOUT", "-3"));
  TransferOptions d = TransferOptions::from_environment();
  EXPECT_EQ(d.stall_timeout, TransferOptions{}.stall_timeout);
  EXPECT_EQ(d.connect_timeout, TransferOptions{}.connect_timeout);
}

}  // namespace
}  // namespace lemon::download
