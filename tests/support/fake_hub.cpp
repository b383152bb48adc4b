#include "support/fake_hub.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>

#include "support/test_env.h"

extern char** environ;

namespace lemon::testing {

namespace fs = std::filesystem;

namespace {

httplib::Client client(int port) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(60, 0);
  return c;
}

}  // namespace

FakeHub::FakeHub() = default;

FakeHub::~FakeHub() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

void FakeHub::add_file(const std::string& repo, const std::string& rel,
                       const std::string& content) {
  fs::path p = fs::path(root_) / repo / rel;
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
}

void FakeHub::add_random_file(const std::string& repo, const std::string& rel, std::uint64_t size,
                              unsigned seed) {
  fs::path p = fs::path(root_) / repo / rel;
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> buf(1u << 17);  // 1 MiB
  std::uint64_t left = size;
  while (left > 0) {
    for (auto& w : buf) {
      w = rng();
    }
    std::uint64_t n = std::min<std::uint64_t>(left, buf.size() * sizeof(std::uint64_t));
    out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(n));
    left -= n;
  }
}

void FakeHub::set_token(const std::string& repo, const std::string& token) {
  add_file(repo, ".fake.json", nlohmann::json{{"token", token}}.dump());
}

bool FakeHub::start() {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe failed";
    return false;
  }
  std::string bin = fake_bin("fake-hub");
  std::vector<std::string> args = {bin, "--root", root_, "--port", "0"};
  std::vector<char*> argv;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  int rc = ::posix_spawn(&pid_, bin.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (rc != 0) {
    ::close(out[0]);
    pid_ = -1;
    ADD_FAILURE() << "cannot start " << bin;
    return false;
  }
  // The one line "fake-hub listening on 127.0.0.1:<port>".
  std::string line;
  char c = 0;
  while (::read(out[0], &c, 1) == 1 && c != '\n') {
    line += c;
  }
  ::close(out[0]);
  auto colon = line.rfind(':');
  if (line.find("listening on") == std::string::npos || colon == std::string::npos) {
    ADD_FAILURE() << "fake-hub did not start: '" << line << "'";
    return false;
  }
  port_ = std::stoi(line.substr(colon + 1));
  return true;
}

std::string FakeHub::endpoint() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

void FakeHub::set_knobs(const nlohmann::json& rules) {
  auto c = client(port_);
  auto r = c.Post("/_fake/knobs", nlohmann::json{{"rules", rules}}.dump(), "application/json");
  EXPECT_TRUE(r && r->status == 200) << "cannot set fake-hub knobs";
}

nlohmann::json FakeHub::log() const {
  auto c = client(port_);
  auto r = c.Get("/_fake/log");
  if (!r || r->status != 200) {
    ADD_FAILURE() << "cannot read the fake-hub log";
    return nlohmann::json::array();
  }
  return nlohmann::json::parse(r->body);
}

void FakeHub::clear_log() {
  auto c = client(port_);
  auto r = c.Post("/_fake/log/clear", "", "application/json");
  EXPECT_TRUE(r && r->status == 200);
}

nlohmann::json FakeHub::listing(const std::string& repo) const {
  // (Shows up in the request log like any other request.)
  auto c = client(port_);
  auto r = c.Get("/api/models/" + repo + "?blobs=true");
  if (!r || r->status != 200) {
    ADD_FAILURE() << "cannot list " << repo;
    return nlohmann::json::object();
  }
  return nlohmann::json::parse(r->body);
}

bool FakeHub::wait_stalled(const std::string& path) const {
  auto c = client(port_);
  auto r = c.Get("/_fake/wait?event=stalled&path=" + path +
                 "&timeout_ms=" + std::to_string(kWait.count()));
  return r && r->status == 200;
}

bool FakeHub::wait_requests(const std::string& path, int n) const {
  auto c = client(port_);
  auto r = c.Get("/_fake/wait?event=request&count=" + std::to_string(n) + "&path=" + path +
                 "&timeout_ms=" + std::to_string(kWait.count()));
  return r && r->status == 200;
}

}  // namespace lemon::testing
