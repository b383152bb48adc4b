// GGUF variant rules: which file(s) of a llama.cpp repository snapshot the
// variant of a checkpoint ("org/repo:<variant>") names. File names are
// matched case-insensitively; mmproj files never count as a main model.
//
//   "*"                 every non-mmproj .gguf; main = first sorted
//   "<path>.gguf/.bin"  exactly that relative path
//   ""                  the first sorted non-mmproj .gguf
//   other               exactly one file named "*<variant>.gguf"; else the
//                       shard set "*<variant>-00001-of-NNNNN.gguf"; else every
//                       .gguf under a folder named "<variant>/"
//
// There is no fallback: a variant that is not on disk is reported missing,
// never replaced by another file. When the main file is the first shard of a
// split model ("-00001-of-00003"), every shard must be present.
//
// Ownership/thread-safety: pure functions over a listing; no I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lemon/models/hf_cache.h"

namespace lemon {

bool is_gguf_name(std::string_view name);    // ends with ".gguf", any case
bool is_mmproj_name(std::string_view name);  // contains "mmproj", any case

struct GgufChoice {
  // Relative path of the main file; empty unless every needed file is present.
  std::string main;
  // Every file the model needs (relative, main first) when a rule matched.
  std::vector<std::string> files;
  // What is absent or wrong, relative to the listed directory (a path, or a
  // pattern such as "*Q8_0.gguf", with a note where useful). Non-empty
  // exactly when `main` is empty.
  std::vector<std::string> missing;
};

// Applies the rules above to a listing from hf::list_files().
GgufChoice choose_gguf(const std::vector<hf::SnapshotFile>& listing, std::string_view variant);

}  // namespace lemon
