// Download planning: from a model's checkpoints
// and the hub's listings of their repositories, the exact files to fetch.
// The same rules as resolution on disk (model_files.h, gguf_variant.h):
//
//   llamacpp main       GGUF variant rules over the repository listing
//                       (exact file, ":VARIANT", every shard of a split set)
//   ryzenai-llm, oga-*  every file of the repository
//   other roles/recipes "repo:file", exactly that file (mmproj, whisper and
//                       sd-cpp files, text_encoder, vae, llm)
//
// Roles that never make a model not-downloaded (npu_cache, ...) are not
// fetched. A variant with no matching file is kRemoteNotFound naming the
// variants that do exist.
//
// Ownership/thread-safety: pure functions; no I/O.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lemon/core/error.h"
#include "lemon/models/hub_client.h"
#include "lemon/models/model_info.h"

namespace lemon {

struct PlannedFile {
  std::string repo;    // "org/name"
  std::string commit;  // the listing's commit
  HubFile file;
};

// The repositories `info`'s files come from, main first, each once.
// kUnsupportedOperation for models the store does not download (FLM models,
// local paths, --extra-models-dir); kInvalidRequest (param "checkpoint") for
// a checkpoint that names no valid repository.
Result<std::vector<std::string>> plan_repositories(const ModelInfo& info);

// The files to fetch, main model file first, each (repo, path) once.
// `listings` must hold every repository plan_repositories() named.
Result<std::vector<PlannedFile>> plan_download(const ModelInfo& info,
                                               const std::map<std::string, RepoListing>& listings);

// Variant names a GGUF listing offers ("Q4_K_M", "Q8_0", ...), sorted, for
// "variant not found" messages.
std::vector<std::string> gguf_variants(const RepoListing& listing);

}  // namespace lemon
