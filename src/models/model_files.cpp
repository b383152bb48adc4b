#include "lemon/models/model_files.h"

#include <algorithm>
#include <system_error>

#include "lemon/core/log.h"
#include "lemon/models/gguf_variant.h"
#include "lemon/models/hf_cache.h"

namespace lemon {

namespace fs = std::filesystem;

namespace {

// What one checkpoint role resolved to: a path, or why not.
struct RoleResult {
  std::string path;                  // empty when not resolved
  std::vector<std::string> missing;  // why not, when path is empty
  std::string found_mmproj;          // an mmproj found next to a local GGUF folder
};

RoleResult missing(std::string what) {
  RoleResult r;
  r.missing.push_back(std::move(what));
  return r;
}

RoleResult found(const fs::path& p) {
  RoleResult r;
  r.path = p.string();
  return r;
}

bool directory_exists(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

std::string prefixed(const fs::path& dir, const std::string& rel) {
  return dir.string() + "/" + rel;
}

// An exact file: present, or described as missing.
RoleResult exact_file(const fs::path& p) {
  auto state = hf::file_state(p);
  if (state == hf::FileState::kPresent) {
    return found(p);
  }
  return missing(hf::describe(p.string(), state));
}

// The directory holding genai_config.json (first in sorted order) under
// `dir`; every file of the snapshot must be complete.
RoleResult onnx_dir(const fs::path& dir) {
  auto listing = hf::list_files(dir);
  RoleResult r;
  for (const auto& f : listing) {
    if (f.state != hf::FileState::kPresent) {
      r.missing.push_back(hf::describe(prefixed(dir, f.rel), f.state));
    } else if (r.path.empty() && fs::path(f.rel).filename() == "genai_config.json") {
      r.path = (dir / fs::path(f.rel).parent_path()).lexically_normal().string();
      if (!r.path.empty() && r.path.back() == '/') {
        r.path.pop_back();
      }
    }
  }
  if (r.path.empty()) {
    r.missing.insert(r.missing.begin(), prefixed(dir, "**/genai_config.json"));
  }
  if (!r.missing.empty()) {
    r.path.clear();
  }
  return r;
}

// A folder of GGUF files, as in --extra-models-dir: the first sorted
// non-mmproj .gguf (all shards present), plus an mmproj file if there is one.
RoleResult gguf_folder(const fs::path& dir) {
  auto listing = hf::list_files(dir);
  auto choice = choose_gguf(listing, "");
  RoleResult r;
  if (choice.main.empty()) {
    for (const auto& m : choice.missing) {
      r.missing.push_back(prefixed(dir, m));
    }
    return r;
  }
  r.path = (dir / choice.main).string();
  for (const auto& f : listing) {
    auto name = fs::path(f.rel).filename().string();
    if (f.state == hf::FileState::kPresent && is_gguf_name(name) && is_mmproj_name(name)) {
      r.found_mmproj = (dir / f.rel).string();
      break;
    }
  }
  return r;
}

// local_path / local_upload: the checkpoint is a path (absolute, or relative
// to the hub cache). A non-main role written "<path>:<file>" (the legacy
// top-level mmproj) names <file> in <path>, or next to <path> if it is a file.
RoleResult resolve_local(const ModelInfo& info, const std::string& role, const std::string& ckpt,
                         const ResolveContext& ctx) {
  auto to_path = [&](std::string s) {
    if (info.source != ModelSource::kUserLocalUpload) {
      return fs::path(s);
    }
    std::replace(s.begin(), s.end(), '\\', '/');
    return ctx.hf_hub_cache / s;
  };
  if (role != "main") {
    auto ref = hf::split_checkpoint(ckpt);
    if (ref.variant.empty()) {
      return exact_file(to_path(ckpt));
    }
    fs::path base = to_path(ref.repo);
    return exact_file((directory_exists(base) ? base : base.parent_path()) / ref.variant);
  }
  fs::path p = to_path(ckpt);
  if (is_onnx_recipe(info.recipe)) {
    return directory_exists(p) ? onnx_dir(p) : missing(p.string() + " (expected a directory)");
  }
  if (directory_exists(p)) {
    if (info.recipe != "llamacpp") {
      return missing(p.string() + " (expected a model file, found a directory)");
    }
    return gguf_folder(p);
  }
  return exact_file(p);
}

// A checkpoint in the HF hub cache.
RoleResult resolve_hub(const ModelInfo& info, const std::string& role, const std::string& ckpt,
                       const ResolveContext& ctx) {
  auto ref = hf::split_checkpoint(ckpt);
  if (ref.repo.empty()) {
    return missing("checkpoint '" + ckpt + "' names no repository");
  }
  if (ctx.hf_hub_cache.empty()) {
    return missing(ref.repo + " (no Hugging Face hub cache configured)");
  }
  fs::path repo = hf::repo_dir(ctx.hf_hub_cache, ref.repo);
  if (!directory_exists(repo)) {
    return missing(repo.string());
  }
  auto snapshot = hf::current_snapshot(repo);
  if (!snapshot) {
    return missing((repo / "snapshots").string() + " (no snapshot)");
  }
  if (hf::has_download_manifest(*snapshot)) {
    return missing(snapshot->string() + " (incomplete download: .download_manifest.json present)");
  }
  if (is_gguf_model_role(info.recipe, role)) {
    auto choice = choose_gguf(hf::list_files(*snapshot), ref.variant);
    if (choice.main.empty()) {
      RoleResult r;
      for (const auto& m : choice.missing) {
        r.missing.push_back(prefixed(*snapshot, m));
      }
      return r;
    }
    return found(*snapshot / choice.main);
  }
  if (role == "main" && is_onnx_recipe(info.recipe)) {
    return onnx_dir(*snapshot);
  }
  if (ref.variant.empty()) {
    return missing(snapshot->string() + " (checkpoint '" + ckpt + "' names no file)");
  }
  return exact_file(*snapshot / ref.variant);
}

void resolve_flm(ModelInfo& info, const ResolveContext& ctx) {
  const std::string& tag = info.checkpoint();
  bool installed =
      !ctx.flm_installed || std::find(ctx.flm_installed->begin(), ctx.flm_installed->end(), tag) !=
                                ctx.flm_installed->end();
  if (installed && !tag.empty()) {
    info.resolved_paths["main"] = tag;
    info.downloaded = true;
  } else {
    info.missing_paths.push_back("FLM model '" + tag + "' (not installed; `flm pull " + tag +
                                 "` installs it)");
  }
}

}  // namespace

bool is_required_role(std::string_view recipe, std::string_view role) {
  if (role == "main") {
    return true;
  }
  if (recipe == "llamacpp") {
    return role == "mmproj" || role == "draft";
  }
  if (recipe == "sd-cpp") {
    return role == "text_encoder" || role == "vae" || role == "llm";
  }
  return false;
}

bool is_gguf_model_role(std::string_view recipe, std::string_view role) {
  return recipe == "llamacpp" && (role == "main" || role == "draft");
}

void resolve_model_files(ModelInfo& info, const ResolveContext& ctx) {
  info.resolved_paths.clear();
  info.missing_paths.clear();
  info.downloaded = false;
  if (info.recipe == "remote") {
    info.downloaded = true;  // served by another machine: no file here
    return;
  }
  if (info.recipe == "flm") {
    resolve_flm(info, ctx);
    return;
  }
  if (info.checkpoint().empty()) {
    info.missing_paths.push_back("model '" + info.name + "' has no main checkpoint");
    return;
  }
  const bool local =
      info.source == ModelSource::kUserLocalPath || info.source == ModelSource::kUserLocalUpload;
  bool complete = true;
  std::string found_mmproj;
  for (const auto& [role, ckpt] : info.checkpoints) {
    RoleResult r =
        local ? resolve_local(info, role, ckpt, ctx) : resolve_hub(info, role, ckpt, ctx);
    if (!r.path.empty()) {
      info.resolved_paths[role] = r.path;
      if (!r.found_mmproj.empty()) {
        found_mmproj = r.found_mmproj;
      }
    } else if (is_required_role(info.recipe, role)) {
      complete = false;
      info.missing_paths.insert(info.missing_paths.end(), r.missing.begin(), r.missing.end());
    } else {
      logger("models")->debug("model '{}': optional checkpoint '{}' ({}) not resolved: {}",
                              info.name, role, ckpt, r.missing.empty() ? "" : r.missing.front());
    }
  }
  if (!found_mmproj.empty() && info.checkpoints.count("mmproj") == 0) {
    info.resolved_paths["mmproj"] = found_mmproj;
  }
  // Roles that were found stay in resolved_paths even when another required
  // role is missing; callers check the required roles (or `downloaded`).
  info.downloaded = complete;
}

}  // namespace lemon
