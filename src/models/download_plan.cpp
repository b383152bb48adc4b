#include "lemon/models/download_plan.h"

#include <algorithm>
#include <set>

#include "lemon/models/gguf_variant.h"
#include "lemon/models/hf_cache.h"
#include "lemon/models/model_files.h"

namespace lemon {
namespace {

// "checkpoint 'org/name:file' (role)", for messages.
std::string checkpoint_label(const std::string& checkpoint, const std::string& role) {
  std::string out = "checkpoint '";
  out += checkpoint;
  out += "' (";
  out += role;
  out += ')';
  return out;
}

// Roles fetched, main first.
std::vector<std::pair<std::string, std::string>> fetched_roles(const ModelInfo& info) {
  std::vector<std::pair<std::string, std::string>> roles;
  roles.emplace_back("main", info.checkpoint());
  for (const auto& [role, ckpt] : info.checkpoints) {
    if (role != "main" && is_required_role(info.recipe, role)) {
      roles.emplace_back(role, ckpt);
    }
  }
  return roles;
}

std::string strip_suffix_ci(std::string s, std::string_view suffix) {
  if (s.size() >= suffix.size()) {
    std::string tail = s.substr(s.size() - suffix.size());
    std::transform(tail.begin(), tail.end(), tail.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (tail == suffix) {
      s.resize(s.size() - suffix.size());
    }
  }
  return s;
}

// "-00001-of-00003" at the end of a stem, or npos.
std::size_t shard_suffix_at(const std::string& stem) {
  static constexpr std::size_t kLen = 15;  // "-00001-of-00003"
  if (stem.size() < kLen) {
    return std::string::npos;
  }
  std::size_t at = stem.size() - kLen;
  std::string_view s(stem);
  auto digits = [&](std::size_t from, std::size_t n) {
    return std::all_of(s.begin() + static_cast<std::ptrdiff_t>(from),
                       s.begin() + static_cast<std::ptrdiff_t>(from + n),
                       [](char c) { return c >= '0' && c <= '9'; });
  };
  if (s[at] == '-' && digits(at + 1, 5) && s.substr(at + 6, 4) == "-of-" && digits(at + 10, 5)) {
    return at;
  }
  return std::string::npos;
}

}  // namespace

Result<std::vector<std::string>> plan_repositories(const ModelInfo& info) {
  if (info.recipe == "flm") {
    return Error(
        ErrorCode::kUnsupportedOperation,
        "FLM models are downloaded by FastFlowLM itself: run `flm pull " + info.checkpoint() + "`",
        "model");
  }
  if (info.source != ModelSource::kBuiltIn && info.source != ModelSource::kUser) {
    return Error(
        ErrorCode::kUnsupportedOperation,
        "model '" + info.name + "' is served from a local path; there is nothing to download",
        "model");
  }
  std::vector<std::string> repos;
  for (const auto& [role, ckpt] : fetched_roles(info)) {
    auto ref = hf::split_checkpoint(ckpt);
    if (!is_valid_repo_id(ref.repo)) {
      return Error(ErrorCode::kInvalidRequest,
                   checkpoint_label(ckpt, role) +
                       " does not name a Hugging Face repository (org/name[:file])",
                   "checkpoint");
    }
    if (std::find(repos.begin(), repos.end(), ref.repo) == repos.end()) {
      repos.push_back(ref.repo);
    }
  }
  return repos;
}

std::vector<std::string> gguf_variants(const RepoListing& listing) {
  std::set<std::string> out;
  for (const auto& f : listing.files) {
    std::string name = f.path.substr(f.path.rfind('/') + 1);
    if (!is_gguf_name(name) || is_mmproj_name(name)) {
      continue;
    }
    std::string stem = strip_suffix_ci(name, ".gguf");
    if (auto at = shard_suffix_at(stem); at != std::string::npos) {
      if (f.path.find('/') != std::string::npos) {
        out.insert(f.path.substr(0, f.path.find('/')));  // "Q4_K_M/xxx-00001-of-00002.gguf"
        continue;
      }
      stem.resize(at);
    }
    std::size_t cut = stem.find_last_of("-.");
    out.insert(cut == std::string::npos ? stem : stem.substr(cut + 1));
  }
  return {out.begin(), out.end()};
}

Result<std::vector<PlannedFile>> plan_download(const ModelInfo& info,
                                               const std::map<std::string, RepoListing>& listings) {
  std::vector<PlannedFile> plan;
  auto add = [&](const RepoListing& listing, const HubFile& f) {
    for (const auto& p : plan) {
      if (p.repo == listing.repo && p.file.path == f.path) {
        return;
      }
    }
    plan.push_back({listing.repo, listing.commit, f});
  };
  for (const auto& [role, ckpt] : fetched_roles(info)) {
    auto ref = hf::split_checkpoint(ckpt);
    auto it = listings.find(ref.repo);
    if (it == listings.end()) {
      return Error(ErrorCode::kInternal, "no listing for " + ref.repo);
    }
    const RepoListing& listing = it->second;
    if (is_gguf_model_role(info.recipe, role)) {
      std::vector<hf::SnapshotFile> files;
      files.reserve(listing.files.size());
      for (const auto& f : listing.files) {
        files.push_back({f.path, hf::FileState::kPresent});
      }
      std::sort(files.begin(), files.end(),
                [](const auto& a, const auto& b) { return a.rel < b.rel; });
      auto choice = choose_gguf(files, ref.variant);
      if (choice.main.empty()) {
        std::string available;
        for (const auto& v : gguf_variants(listing)) {
          available += (available.empty() ? "" : ", ") + v;
        }
        return Error(ErrorCode::kRemoteNotFound,
                     "variant '" + ref.variant + "' of " + ref.repo +
                         " was not found on the hub; available variants: " +
                         (available.empty() ? "none (no .gguf files)" : available),
                     "checkpoint");
      }
      for (const auto& rel : choice.files) {
        add(listing, *listing.find(rel));
      }
      continue;
    }
    if (role == "main" && is_onnx_recipe(info.recipe)) {
      for (const auto& f : listing.files) {
        add(listing, f);
      }
      continue;
    }
    if (ref.variant.empty()) {
      return Error(ErrorCode::kInvalidRequest,
                   checkpoint_label(ckpt, role) + " must name a file: org/name:file", "checkpoint");
    }
    const HubFile* f = listing.find(ref.variant);
    if (f == nullptr) {
      return Error(
          ErrorCode::kRemoteNotFound,
          "file '" + ref.variant + "' (" + role + ") was not found in " + ref.repo + " on the hub",
          "checkpoint");
    }
    add(listing, *f);
  }
  return plan;
}

}  // namespace lemon
