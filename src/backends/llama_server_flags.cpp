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

bool is_flag_word(std::string_view w) {
  if (w.size() < 2 || w[0] != '-') {
    return false;
  }
  const std::size_t at = w[1] == '-' ? 2 : 1;
  return at < w.size() && ((w[at] >= 'a' && w[at] <= 'z') || (w[at] >= 'A' && w[at] <= 'Z'));
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
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == ',')) {
        ++i;
      }
      std::size_t end = i;
      while (end < line.size() && line[end] != ' ' && line[end] != '\t' && line[end] != ',') {
        ++end;
      }
      const std::string_view word(line.data() + i, end - i);
      if (is_flag_word(word)) {
        set->emplace(word);
      }
      i = end;
    }
  }
  LlamaServerFlags out;
  out.flags_ = std::move(set);
  return out;
}

bool LlamaServerFlags::knows(std::string_view flag) const {
  return flags_ == nullptr || flags_->find(flag) != flags_->end();
}

std::string LlamaServerFlags::first_known(std::initializer_list<std::string_view> names) const {
  for (auto name : names) {
    if (knows(name)) {
      return std::string(name);
    }
  }
  return {};
}

LlamaServerFlags known_llama_server_flags(ProcessLauncher* launcher,
                                          const std::string& executable) {
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
  spec.log_tag = "llama-server --help";
  spec.kept_lines = kHelpLines;
  LlamaServerFlags flags = LlamaServerFlags::everything();
  auto child = launcher->spawn(spec);
  if (child.ok() &&
      (*child)->wait_exit_until(std::chrono::steady_clock::now() + kHelpTimeout)) {
    std::string help;
    for (const auto& l : (*child)->last_lines(kHelpLines)) {
      help += l;
      help += '\n';
    }
    if (help.find("--port") != std::string::npos) {
      flags = LlamaServerFlags::from_help(help);
    }
  } else if (child.ok()) {
    (*child)->terminate(std::chrono::milliseconds(500));
  }
  if (flags.knows("--an-impossible-flag-for-sure")) {
    logger("backend")->warn("could not read the flags of {} from its --help; assuming a current "
                            "llama-server",
                            executable);
  }
  cache.by_file.insert_or_assign(id, flags);
  return flags;
}

}  // namespace lemon
