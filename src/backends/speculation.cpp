#include "lemon/backends/speculation.h"

#include <algorithm>

#include "lemon/backends/user_args.h"

namespace lemon {
namespace {

// Lemonade's defaults for its `mtp` label (docs/api/openai.md, runtime
// labels).
constexpr const char* kMtpDraftMax = "3";
constexpr const char* kMtpDraftPMin = "0.75";

const std::vector<std::string> kSpecType = {"--spec-type"};
const std::vector<std::string> kDraftMax = {"--spec-draft-n-max", "--draft-max", "--draft",
                                            "--draft-n"};
const std::vector<std::string> kDraftPMin = {"--spec-draft-p-min", "--draft-p-min"};
const std::vector<std::string> kDraftLayers = {"-ngld", "--gpu-layers-draft",
                                               "--n-gpu-layers-draft", "--spec-draft-ngl"};

// The value of the first of `names` in `args` ("-md x" or "--model-draft=x").
std::string value_of(const std::vector<std::string>& args, const std::vector<std::string>& names) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string flag = flag_name(args[i]);
    if (std::find(names.begin(), names.end(), flag) == names.end()) {
      continue;
    }
    if (const auto eq = args[i].find('='); eq != std::string::npos) {
      return args[i].substr(eq + 1);
    }
    return i + 1 < args.size() ? args[i + 1] : std::string();
  }
  return {};
}

}  // namespace

const std::vector<std::string>& draft_model_flags() {
  static const std::vector<std::string> kFlags = {"-md", "--model-draft", "--spec-draft-model"};
  return kFlags;
}

Speculation speculation_of(const ModelInfo& model, const RecipeOptions& options,
                           const std::vector<std::string>& user_args) {
  Speculation s;
  if (!options.bool_value("speculative", true)) {
    return s;
  }
  s.draft_path = model.resolved_path("draft");
  if (s.draft_path.empty()) {
    s.draft_path = value_of(user_args, draft_model_flags());
    s.draft_from_args = !s.draft_path.empty();
  }
  s.mtp = std::find(model.labels.begin(), model.labels.end(), "mtp") != model.labels.end();
  return s;
}

std::vector<std::string> speculation_args(const Speculation& s,
                                          const std::vector<std::string>& user_args,
                                          const LlamaServerFlags& flags, bool gpu,
                                          std::string& left_out) {
  std::vector<std::string> args;
  if (!s.on()) {
    return args;
  }
  auto add_default = [&](const std::vector<std::string>& names, const std::string& value) {
    if (has_any_flag(user_args, names)) {
      return;  // the user's own value wins
    }
    std::string flag;
    for (const auto& n : names) {
      if (flags.knows(n)) {
        flag = n;
        break;
      }
    }
    if (flag.empty()) {
      left_out += (left_out.empty() ? "" : ", ") + names.front() + " " + value + ", unknown to it";
      return;
    }
    args.push_back(flag);
    if (!value.empty()) {
      args.push_back(value);
    }
  };
  const bool typed = has_any_flag(user_args, kSpecType);  // the user's own --spec-type
  if (s.mtp && !typed && !(flags.knows("--spec-type") && flags.knows("draft-mtp"))) {
    // Without draft-mtp a draft file beside the model (its MTP heads) is no
    // model to draft with either: nothing is added.
    left_out = "multi-token prediction (--spec-type draft-mtp), which it predates";
    return args;
  }
  if (!s.draft_path.empty() && !s.draft_from_args) {
    args.insert(args.end(), {"-md", s.draft_path});
  }
  if (!s.draft_path.empty() && gpu) {
    add_default(kDraftLayers, "99");  // the draft on the model's own GPU
  }
  if (s.mtp) {
    add_default(kSpecType, "draft-mtp");
    add_default(kDraftMax, kMtpDraftMax);
    add_default(kDraftPMin, kMtpDraftPMin);
  } else if (flags.knows("draft-simple")) {
    // A llama-server from before the draft types (the pinned b8175 among
    // them) drafts with any -md; a current one only when told to.
    add_default(kSpecType, "draft-simple");
  }
  return args;
}

}  // namespace lemon
