// LlamaServerFlags: the command-line flags a llama-server binary knows, and
// the values its --help lists (the --spec-type names), read once from its
// `--help` (per binary: path, size and modification time), so that the
// router passes a speculative-decoding flag only to a llama-server that has
// it: `--spec-draft-n-max` and the `draft-simple`/`draft-mtp` types are
// recent (the pinned b8175 has `--spec-type` with n-gram types only), and an
// unknown flag or type makes llama-server exit at once.
//
// Thread-safety: known_llama_server_flags() may be called from any thread;
// a binary's --help runs at most once at a time (others wait for it).
#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lemon/process/process_launcher.h"

namespace lemon {

class LlamaServerFlags {
 public:
  // Knows every flag: what is assumed when --help cannot be read (a flag
  // then fails loudly in llama-server's own words rather than silently).
  static LlamaServerFlags everything() { return LlamaServerFlags(); }
  // The words of one --help text, split at blanks, commas, brackets and
  // bars: its flags ("--spec-draft-model, -md, --model-draft FNAME") and the
  // values it lists ("--spec-type none,draft-simple,..." or "[none|...]").
  static LlamaServerFlags from_help(std::string_view help);

  // True when `word` (a flag or a listed value) is in its --help.
  bool knows(std::string_view word) const;

 private:
  LlamaServerFlags() = default;
  std::shared_ptr<const std::set<std::string, std::less<>>> words_;  // null: every word
};

// The flags of the llama-server at `executable`, from its --help, run with
// `launcher` and `env` (its release's library path) and cached by the
// file's identity. everything() when the launcher is null or the help
// cannot be read (logged).
LlamaServerFlags known_llama_server_flags(
    ProcessLauncher* launcher, const std::string& executable,
    const std::vector<std::pair<std::string, std::string>>& env);

}  // namespace lemon
