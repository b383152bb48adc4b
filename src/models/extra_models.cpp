#include "lemon/models/extra_models.h"

#include <algorithm>
#include <map>
#include <set>
#include <system_error>

#include "lemon/core/log.h"
#include "lemon/models/gguf_variant.h"

namespace lemon {

namespace fs = std::filesystem;

namespace {

constexpr double kBytesPerGb = 1024.0 * 1024.0 * 1024.0;

double size_gb(const fs::path& p) {
  std::error_code ec;
  auto bytes = fs::file_size(p, ec);
  return ec ? 0.0 : static_cast<double>(bytes) / kBytesPerGb;
}

ModelInfo extra_model(const std::string& name) {
  ModelInfo info;
  info.name = "extra." + name;
  info.recipe = "llamacpp";
  info.labels = {"custom"};
  info.suggested = true;
  info.source = ModelSource::kExtraDir;
  info.downloaded = true;
  return info;
}

}  // namespace

std::vector<ModelInfo> scan_extra_models_dir(const fs::path& dir) {
  std::vector<ModelInfo> out;
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) {
    return out;
  }
  // Regular .gguf files (symlinks followed), grouped by the directory that
  // directly holds them; std::map/std::set keep everything sorted.
  std::set<fs::path> top_level;
  std::map<fs::path, std::set<fs::path>> by_dir;
  const auto opts = fs::directory_options::skip_permission_denied;
  for (auto it = fs::recursive_directory_iterator(dir, opts, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code sec;
    if (!it->is_regular_file(sec) || !is_gguf_name(it->path().filename().string())) {
      continue;
    }
    if (it.depth() == 0) {
      top_level.insert(it->path());
    } else {
      by_dir[it->path().parent_path()].insert(it->path());
    }
  }
  if (ec) {
    logger("models")->warn("scanning {}: {}", dir.string(), ec.message());
  }

  std::set<std::string> names;
  auto add = [&](ModelInfo info) {
    if (!names.insert(info.name).second) {
      logger("models")->warn("extra models dir: '{}' found twice; keeping {}", info.name,
                             info.checkpoint());
      return;
    }
    info.type = model_type_of(info.labels, info.recipe);
    out.push_back(std::move(info));
  };

  for (const auto& file : top_level) {
    std::string fname = file.filename().string();
    if (is_mmproj_name(fname)) {
      continue;
    }
    ModelInfo info = extra_model(fname);
    info.checkpoints["main"] = file.string();
    info.resolved_paths["main"] = file.string();
    info.size_gb = size_gb(file);
    add(std::move(info));
  }
  for (const auto& [parent, files] : by_dir) {
    fs::path main_file;
    fs::path mmproj_file;
    double total = 0.0;
    for (const auto& file : files) {
      total += size_gb(file);
      bool mmproj = is_mmproj_name(file.filename().string());
      if (mmproj && mmproj_file.empty()) {
        mmproj_file = file;
      } else if (!mmproj && main_file.empty()) {
        main_file = file;
      }
    }
    if (main_file.empty()) {
      continue;  // only mmproj files: not a model on its own
    }
    ModelInfo info = extra_model(parent.filename().string());
    info.checkpoints["main"] = parent.string();
    info.resolved_paths["main"] = main_file.string();
    info.size_gb = total;
    if (!mmproj_file.empty()) {
      info.checkpoints["mmproj"] = mmproj_file.string();
      info.resolved_paths["mmproj"] = mmproj_file.string();
      info.labels.push_back("vision");
    }
    add(std::move(info));
  }
  std::sort(out.begin(), out.end(),
            [](const ModelInfo& a, const ModelInfo& b) { return a.name < b.name; });
  return out;
}

}  // namespace lemon
