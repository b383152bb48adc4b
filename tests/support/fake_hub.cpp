#include "support/fake_hub.h"
#include "support/process_signal.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>

namespace lemon::testing {

namespace fs = std::filesystem;

namespace {

httplib::Client control_client(int port, std::chrono::milliseconds read_timeout) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(5, 0);
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(read_timeout).count();
  c.set_read_timeout(static_cast<time_t>(seconds) + 30, 0);
  return c;
}

// Reads one line from `fd` within `timeout` ("" on EOF or timeout).
std::string read_line(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string line;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return {};
    }
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) {
      continue;
    }
    if (r <= 0) {
      return {};
    }
    char c = 0;
    ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return {};
    }
    if (c == '\n') {
      return line;
    }
    line += c;
  }
}

}  // namespace

FakeHub::FakeHub() : dir_(std::make_unique<TempDir>("lemon-hub")), root_(dir_->path().string()) {}

FakeHub::FakeHub(std::string root) : root_(std::move(root)) {
  fs::create_directories(root_);
}

FakeHub::~FakeHub() {
  if (pid_ > 0) {
    try_signal_process(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

std::string FakeHub::file_path(const std::string& repo, const std::string& rel) const {
  return (fs::path(root_) / repo / rel).string();
}

std::string FakeHub::add_file(const std::string& repo, const std::string& rel,
                              const std::string& content) {
  const fs::path p = file_path(repo, rel);
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  EXPECT_TRUE(out) << "cannot write " << p;
  return p.string();
}

std::string FakeHub::add_random_file(const std::string& repo, const std::string& rel,
                                     std::uint64_t size, unsigned seed) {
  const fs::path p = file_path(repo, rel);
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> buf(1u << 17);  // 1 MiB
  std::uint64_t left = size;
  while (left > 0 && out) {
    for (auto& w : buf) {
      w = rng();
    }
    const std::uint64_t n = std::min<std::uint64_t>(left, buf.size() * sizeof(std::uint64_t));
    out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(n));
    left -= n;
  }
  out.close();
  EXPECT_TRUE(out) << "cannot write " << p;
  return p.string();
}

void FakeHub::set_token(const std::string& repo, const std::string& token) {
  add_file(repo, ".fake.json", nlohmann::json{{"token", token}}.dump());
}

bool FakeHub::start() {
  if (pid_ > 0) {
    return true;
  }
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe2 failed";
    return false;
  }
  const std::string bin = fake_bin("fake-hub");
  std::vector<std::string> args = {bin, "--root", root_, "--host", "127.0.0.1", "--port", "0"};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  const int rc = ::posix_spawn(&pid_, bin.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    pid_ = -1;
    ADD_FAILURE() << "cannot start " << bin << ": " << std::strerror(rc);
    return false;
  }
  // "fake-hub listening on 127.0.0.1:<port>", printed once it accepts. The
  // hub prints nothing else on stdout (it ignores SIGPIPE anyway).
  const std::string line = read_line(out[0], kWait);
  ::close(out[0]);
  const std::string prefix = "fake-hub listening on 127.0.0.1:";
  if (!line.starts_with(prefix)) {
    ADD_FAILURE() << "fake-hub did not start: '" << line << "'";
    return false;
  }
  port_ = std::stoi(line.substr(prefix.size()));
  return port_ > 0;
}

std::string FakeHub::endpoint() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

void FakeHub::set_knobs(const nlohmann::json& rules) {
  auto c = control_client(port_, std::chrono::seconds(0));
  auto r = c.Post("/_fake/knobs", nlohmann::json{{"rules", rules}}.dump(), "application/json");
  EXPECT_TRUE(r && r->status == 200) << "cannot set fake-hub knobs " << rules.dump() << ": "
                                     << (r ? r->body : httplib::to_string(r.error()));
}

nlohmann::json FakeHub::log() const {
  auto c = control_client(port_, std::chrono::seconds(0));
  auto r = c.Get("/_fake/log");
  if (!r || r->status != 200) {
    ADD_FAILURE() << "cannot read the fake-hub log";
    return nlohmann::json::array();
  }
  return nlohmann::json::parse(r->body);
}

void FakeHub::clear_log() {
  auto c = control_client(port_, std::chrono::seconds(0));
  auto r = c.Post("/_fake/log/clear", "", "application/json");
  EXPECT_TRUE(r && r->status == 200) << "cannot clear the fake-hub log";
}

nlohmann::json FakeHub::listing(const std::string& repo) const {
  auto c = control_client(port_, std::chrono::seconds(0));
  auto r = c.Get("/api/models/" + repo + "?blobs=true");
  if (!r || r->status != 200) {
    ADD_FAILURE() << "cannot list " << repo;
    return nlohmann::json::object();
  }
  return nlohmann::json::parse(r->body);
}

bool FakeHub::wait(const std::string& event, const std::string& path, int n,
                   std::chrono::milliseconds timeout) const {
  auto c = control_client(port_, timeout);
  httplib::Params params = {{"event", event},
                            {"path", path},
                            {"count", std::to_string(n)},
                            {"timeout_ms", std::to_string(timeout.count())}};
  auto r = c.Get("/_fake/wait", params, httplib::Headers{});
  return r && r->status == 200;
}

bool FakeHub::wait_stalled(const std::string& path, std::chrono::milliseconds timeout) const {
  return wait("stalled", path, 1, timeout);
}

bool FakeHub::wait_requests(const std::string& path, int n,
                            std::chrono::milliseconds timeout) const {
  return wait("request", path, n, timeout);
}

}  // namespace lemon::testing
