#include "lemon/backends/llama_server_flags.h"

#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>
#include <tuple>

#include "lemon/core/log.h"
#include "lemon/core/mutex.h"

namespace lemon {
namespace {

constexpr auto kHelpTimeout = std::chrono::seconds(10);
// llama-server's --help is about 600 lines; a little room for more.
constexpr std::size_t kHelpLines = 4000;

bool is_separator(char c) {
  return c == ' ' || c == '\t' || c == ',' || c == '[' || c == ']' || c == '|' || c == '(' ||
         c == ')' || c == '\r';
}

struct FileIdentity {
  std::string path;
  std::uintmax_t size = 0;
  std::int64_t mtime_ns = 0;
  bool operator<(const FileIdentity& o) const {
    return std::tie(path, size, mtime_ns) < std::tie(o.path, o.size, o.mtime_ns);
  }
};

// Each binary's flags, for the router's life.
struct FlagCache {
  Mutex mu;
  std::map<FileIdentity, LlamaServerFlags> by_file LEMON_GUARDED_BY(mu);
};
FlagCache& flag_cache() {
  static FlagCache cache;
  return cache;
}

}  // namespace

LlamaServerFlags LlamaServerFlags::from_help(std::string_view help) {
  auto set = std::make_shared<std::set<std::string, std::less<>>>();
  std::istringstream in{std::string(help)};
  std::string line;
  while (std::getline(in, line)) {
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && is_separator(line[i])) {
        ++i;
      }
      std::size_t end = i;
      while (end < line.size() && !is_separator(line[end])) {
        ++end;
      }
      if (end > i) {
        set->emplace(line.data() + i, end - i);
      }
      i = end;
    }
  }
  LlamaServerFlags out;
  out.words_ = std::move(set);
  return out;
}

bool LlamaServerFlags::knows(std::string_view word) const {
  return words_ == nullptr || words_->find(word) != words_->end();
}

LlamaServerFlags known_llama_server_flags(
    ProcessLauncher* launcher, const std::string& executable,
    const std::vector<std::pair<std::string, std::string>>& env) {
  if (launcher == nullptr || executable.empty()) {
    return LlamaServerFlags::everything();
  }
  std::error_code ec;
  FileIdentity id{executable, std::filesystem::file_size(executable, ec), 0};
  const auto mtime = std::filesystem::last_write_time(executable, ec);
  id.mtime_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(mtime.time_since_epoch()).count();
  // One --help at a time: the loader thread is the only caller in practice.
  FlagCache& cache = flag_cache();
  MutexLock lock(cache.mu);
  if (auto it = cache.by_file.find(id); it != cache.by_file.end()) {
    return it->second;
  }
  SpawnSpec spec;
  spec.executable = executable;
  spec.args = {"--help"};
  spec.env = env;
  spec.log_tag = "llama-server --help";
  spec.kept_lines = kHelpLines;
  LlamaServerFlags flags = LlamaServerFlags::everything();
  bool read = false;
  auto child = launcher->spawn(spec);
  if (child.ok() && (*child)->wait_exit_until(std::chrono::steady_clock::now() + kHelpTimeout)) {
    std::string help;
    for (const auto& l : (*child)->last_lines(kHelpLines)) {
      help += l;
      help += '\n';
    }
    if (help.find("--port") != std::string::npos) {
      flags = LlamaServerFlags::from_help(help);
      read = true;
    }
  } else if (child.ok()) {
    (*child)->terminate(std::chrono::milliseconds(500));
  }
  if (!read) {
    logger("backend")->warn(
        "could not read the flags of {} from its --help; assuming a current llama-server",
        executable);
  }
  cache.by_file.insert_or_assign(id, flags);
  return flags;
}

}  // namespace lemon
