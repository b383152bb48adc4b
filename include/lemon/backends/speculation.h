// Speculation: how a llama.cpp model drafts tokens (speculative decoding),
// decided from its catalogue entry and load options:
// - a draft model: checkpoints.draft (Lemonade 11's multi-checkpoint form),
//   or a -md/--model-draft/--spec-draft-model in llamacpp_args, given to
//   llama-server as -md with --spec-type draft-simple (a plain -md drafts
//   nothing in a current llama-server; one without the draft types, such
//   as the pinned b8175, gets -md alone and drafts with it);
// - the model's own multi-token prediction: the `mtp` label, with
//   Lemonade's defaults --spec-type draft-mtp --spec-draft-n-max 3
//   --spec-draft-p-min 0.75 (a draft file beside it holds the MTP heads);
// - none: `speculative: false` (a load option) turns both off.
// Every flag the router adds is a default that llamacpp_args overrides by
// naming it, and is left out for a llama-server that does not know it; MTP
// (its draft file with it) is left out whole for one without draft-mtp.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "lemon/backends/llama_server_flags.h"
#include "lemon/models/model_info.h"
#include "lemon/models/recipe_options.h"

namespace lemon {

struct Speculation {
  std::string draft_path;        // the draft's GGUF; "" without a draft model
  bool draft_from_args = false;  // named by llamacpp_args, not checkpoints.draft
  bool mtp = false;              // the model's own multi-token prediction
  bool on() const { return !draft_path.empty() || mtp; }
};

// `user_args`: llamacpp_args, split. A draft is checkpoints.draft's resolved
// file, else the value of a draft flag in user_args.
Speculation speculation_of(const ModelInfo& model, const RecipeOptions& options,
                           const std::vector<std::string>& user_args);

// The flags that name a draft model, in every llama-server's spelling.
const std::vector<std::string>& draft_model_flags();

// The arguments that turn `s` on (none when it is off), for a llama-server
// that knows `flags`, the model running on a GPU or not. A draft named in
// user_args is not repeated. What had to be left out (an older llama-server
// without --spec-type) is described in `left_out`.
std::vector<std::string> speculation_args(const Speculation& s,
                                          const std::vector<std::string>& user_args,
                                          const LlamaServerFlags& flags, bool gpu,
                                          std::string& left_out);

}  // namespace lemon
