#include "lemon/models/local_import.h"
#include "lemon/core/text.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace lemon {
namespace {

namespace fs = std::filesystem;

bool has_suffix(const std::string& name, std::initializer_list<const char*> suffixes) {
  auto l = ascii_lower(name);
  return std::any_of(suffixes.begin(), suffixes.end(),
                     [&](const char* s) { return l.ends_with(s); });
}

// Every regular file under `dir`, sorted, so the choice is stable.
std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) {
      files.push_back(it->path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::optional<fs::path> model_path(const std::string& recipe, const fs::path& dir,
                                   const std::vector<fs::path>& files) {
  for (const auto& f : files) {
    auto name = f.filename().string();
    if (recipe == "llamacpp" && has_suffix(name, {".gguf"}) &&
        ascii_lower(name).find("mmproj") == std::string::npos) {
      return f;
    }
    if (recipe == "whispercpp" && has_suffix(name, {".bin"})) {
      return f;
    }
    if (recipe == "sd-cpp" && has_suffix(name, {".safetensors", ".gguf", ".ckpt"})) {
      return f;
    }
    if ((recipe == "ryzenai-llm" || recipe.starts_with("oga-")) && name == "genai_config.json") {
      return f.parent_path();
    }
  }
  if (recipe == "flm") {
    return dir;
  }
  return std::nullopt;
}

}  // namespace

Result<UserModelRegistration> register_local_import(std::string_view model_name,
                                                    const nlohmann::json& body,
                                                    const fs::path& hf_hub_cache) {
  // The name, recipe and labels are checked as for a hub registration; the
  // placeholder checkpoint is replaced below.
  nlohmann::json checked = body;
  checked["checkpoint"] = "local/import";
  checked.erase("checkpoints");
  checked.erase("mmproj");
  auto reg = parse_user_registration(model_name, checked);
  if (!reg.ok()) {
    return reg;
  }
  const std::string recipe = reg->entry.value("recipe", "");
  std::string folder = reg->key;
  std::replace(folder.begin(), folder.end(), '/', '-');
  const fs::path dir = hf_hub_cache / ("models--" + folder);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Error(ErrorCode::kInvalidRequest,
                 "nothing to import: " + dir.string() +
                     " is not a folder (the CLI copies the "
                     "model's files there first)",
                 "local_import");
  }
  auto files = files_under(dir);
  auto main = model_path(recipe, dir, files);
  if (!main) {
    return Error(ErrorCode::kInvalidRequest,
                 "no model file for recipe '" + recipe + "' in " + dir.string(), "checkpoint");
  }
  reg->entry["checkpoint"] = main->lexically_relative(hf_hub_cache).generic_string();
  reg->entry["source"] = "local_upload";

  std::string wanted = body.contains("mmproj") && body["mmproj"].is_string()
                           ? body["mmproj"].get<std::string>()
                           : std::string();
  bool vision = body.value("vision", false) || !wanted.empty();
  if (vision && recipe == "llamacpp") {
    const fs::path* found = nullptr;
    for (const auto& f : files) {
      if (!wanted.empty() && f.filename() == wanted) {
        found = &f;
        break;
      }
    }
    if (found == nullptr) {
      for (const auto& f : files) {
        if (ascii_lower(f.filename().string()).find("mmproj") != std::string::npos) {
          found = &f;
          break;
        }
      }
    }
    if (found != nullptr) {
      reg->entry["mmproj"] = found->lexically_relative(main->parent_path()).generic_string();
      auto labels = reg->entry["labels"].get<std::vector<std::string>>();
      if (std::find(labels.begin(), labels.end(), "vision") == labels.end()) {
        labels.push_back("vision");
        std::sort(labels.begin(), labels.end());
        reg->entry["labels"] = labels;
      }
    } else if (!wanted.empty()) {
      return Error(ErrorCode::kInvalidRequest, "mmproj '" + wanted + "' is not in " + dir.string(),
                   "mmproj");
    }
  }
  return reg;
}

}  // namespace lemon
