// llama-server's preset files (`--models-preset FILE.ini`, llama.cpp's
// tools/server/README.md "Using multiple models" and common/preset.cpp), read
// into presets of ours (preset.h).
//
// The file: `[section]` lines, `key = value` lines (a value ends at the line's
// end or at its first ';' or '#'; spaces around it are trimmed, quotes are
// kept), comment lines starting with ';' or '#', blank lines. Keys before the
// first section belong to a section named "default". A section named again
// starts over. `version` is skipped everywhere.
//
// Sections: `[*]` holds what every other section of the file inherits; each
// other section is one preset, named after it (a name "org/repo:q4_k_m" has
// its tag upper-cased as llama.cpp does: "org/repo:Q4_K_M"). A section key
// wins over the same option in `[*]`.
//
// Keys: llama-server's options without their dashes ("ctx-size"), their
// short forms ("c", "ngl") or their environment names ("LLAMA_ARG_CTX_SIZE"),
// plus the preset-only keys load-on-startup, stop-timeout and
// dedup-cache-models. They map to a preset of ours:
//
//   model, m            the preset's model: an absolute .gguf path
//   hf-repo, hf         the preset's model: "org/repo[:TAG]"
//   (neither)           the section's own name, a model of the catalogue or
//                       the hub cache it gives settings to
//   ctx-size, c         ctx_size;  parallel, np: parallel
//   alias, a / tags     the preset's other names / its tags (comma-separated)
//   options the router  an error: the router sets them itself (port, host,
//   sets itself         API keys, GPU layers, mmproj, embeddings, reranking,
//                       the unified KV cache, models-*)
//   any other option    llamacpp_args ("--flag value"; a flag's false is its
//                       --no- form, or nothing when it has none)
//
// A key that is no llama-server option, or one the router sets, is an error
// naming the file and line; nothing is dropped silently.
//
// Ownership/thread-safety: pure functions (read_llamacpp_preset_file reads
// one file).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lemon/core/error.h"
#include "lemon/models/preset.h"

namespace lemon {

// The INI text itself, before its keys mean anything.
struct IniEntry {
  std::string key;
  std::string value;
  int line = 0;
};
struct IniSection {
  std::string name;
  int line = 0;  // of its header (0 for "default")
  std::vector<IniEntry> entries;
};
// kInvalidOption "<file>:<line>: <what>" for a line that is none of the four.
Result<std::vector<IniSection>> parse_ini(std::string_view text, const std::string& file);

// "org/repo:ud-q4_k_xl" -> "org/repo:Q4_K_XL"; other names unchanged.
std::string canonical_section_name(std::string_view name);

// One section as a preset of ours.
struct IniPreset {
  Preset preset;  // id = the canonical section name
  std::vector<std::string> aliases;
  std::vector<std::string> tags;
  bool load_on_startup = false;
  std::optional<int> stop_timeout_s;
  bool dedup_cache_models = false;
  // The section as it applies ([*] merged in), as llama.cpp renders a
  // preset: "[name]\nkey = value\n...\n\n", long option names.
  std::string text;
};

// The file's presets in file order. Errors: kInvalidOption "<file>:<line>:
// <what>" (the first problem found).
Result<std::vector<IniPreset>> parse_llamacpp_presets(std::string_view text,
                                                      const std::string& file);
// Reads `path` and parses it; kInvalidOption when it cannot be read.
Result<std::vector<IniPreset>> read_llamacpp_preset_file(const std::string& path);

}  // namespace lemon
