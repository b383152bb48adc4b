// LlamaServerFlags: the command-line flags a llama-server binary knows, read
// once from its `--help` (per binary: path, size and modification time), so
// that the router passes a speculative-decoding flag only to a llama-server
// that has it: `--spec-type` and `--spec-draft-n-max` are recent, and an
// unknown flag makes llama-server exit at once ("invalid argument").
//
// Thread-safety: known_llama_server_flags() may be called from any thread;
// a binary's --help runs at most once at a time (others wait for it).
#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "lemon/process/process_launcher.h"

namespace lemon {

class LlamaServerFlags {
 public:
  // Knows every flag: what is assumed when --help cannot be read (a flag
  // then fails loudly in llama-server's own words rather than silently).
  static LlamaServerFlags everything() { return LlamaServerFlags(); }
  // The flags of one --help text: every word that starts with "-" followed
  // by a letter, in the flag columns ("-md, --spec-draft-model FNAME").
  static LlamaServerFlags from_help(std::string_view help);

  bool knows(std::string_view flag) const;
  // The first of `names` it knows, or "" (none).
  std::string first_known(std::initializer_list<std::string_view> names) const;

 private:
  LlamaServerFlags() = default;
  std::shared_ptr<const std::set<std::string, std::less<>>> flags_;  // null: every flag
};

// The flags of the llama-server at `executable`, from its --help, run with
// `launcher` and cached by the file's identity. everything() when the
// launcher is null or the help cannot be read (logged once).
LlamaServerFlags known_llama_server_flags(ProcessLauncher* launcher, const std::string& executable);

}  // namespace lemon
