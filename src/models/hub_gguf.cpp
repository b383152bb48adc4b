#include "lemon/models/hub_gguf.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <system_error>

#include "lemon/models/catalogue.h"
#include "lemon/models/gguf_variant.h"
#include "lemon/models/hf_cache.h"

namespace lemon {
namespace fs = std::filesystem;
namespace {

std::string hub_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

bool tag_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool name_char(char c) {
  return tag_char(c) || c == '.' || c == '-';
}

std::string basename(std::string_view rel) {
  auto slash = rel.rfind('/');
  return std::string(slash == rel.npos ? rel : rel.substr(slash + 1));
}

std::string dirname(std::string_view rel) {
  auto slash = rel.rfind('/');
  return slash == rel.npos ? std::string() : std::string(rel.substr(0, slash));
}

// A model's own file: not an mmproj, not a speculative head.
bool is_model_file(std::string_view rel) {
  const std::string name = basename(rel);
  if (!is_gguf_name(name) || is_mmproj_name(name)) {
    return false;
  }
  for (const char* head : {"mtp-", "eagle3-", "dflash-", "dspark-"}) {
    if (name.find(head) != std::string::npos) {
      return false;
    }
  }
  return true;
}

// TAG followed by '.' or '-' somewhere in `path`, case-insensitively.
bool path_names_tag(std::string_view path, std::string_view tag) {
  const std::string p = hub_upper(path);
  const std::string t = hub_upper(tag);
  for (auto at = p.find(t); at != std::string::npos; at = p.find(t, at + 1)) {
    const auto end = at + t.size();
    if (end < p.size() && (p[end] == '.' || p[end] == '-')) {
      return true;
    }
  }
  return false;
}

// "models--org--name" -> "org/name"; "" for other folders.
std::string repo_of_folder(std::string_view folder) {
  constexpr std::string_view kPrefix = "models--";
  if (!folder.starts_with(kPrefix)) {
    return {};
  }
  std::string_view rest = folder.substr(kPrefix.size());
  auto sep = rest.find("--");
  if (sep == std::string_view::npos || sep == 0 || sep + 2 >= rest.size()) {
    return {};
  }
  return std::string(rest.substr(0, sep)) + "/" + std::string(rest.substr(sep + 2));
}

// The present files of a repository's current snapshot.
struct Snapshot {
  std::set<std::string> present;  // relative paths, sorted
};

std::optional<Snapshot> read_snapshot(const fs::path& hub, std::string_view repo) {
  auto snap = hf::current_snapshot(hf::repo_dir(hub, repo));
  if (!snap) {
    return std::nullopt;
  }
  Snapshot s;
  for (const auto& f : hf::list_files(*snap)) {
    if (f.state == hf::FileState::kPresent) {
      s.present.insert(f.rel);
    }
  }
  return s;
}

// Every shard of the split model whose first shard is `rel` is present.
bool shards_present(const Snapshot& s, const std::string& rel, const GgufNameParts& parts) {
  if (parts.count <= 1) {
    return true;
  }
  const std::string dir = dirname(rel);
  const std::string name = basename(rel);
  // "<stem>-00001-of-0000N.gguf": the stem is what precedes the shard suffix.
  const auto suffix = name.size() - std::string_view("-00001-of-00000.gguf").size();
  const std::string stem = name.substr(0, suffix);
  const std::string ext = name.substr(name.size() - 5);
  auto five_digits = [](int n) {
    std::string digits = std::to_string(n);
    return std::string(digits.size() < 5 ? 5 - digits.size() : 0, '0') + digits;
  };
  const std::string total = five_digits(parts.count);
  for (int k = 1; k <= parts.count; ++k) {
    std::string shard = dir.empty() ? std::string() : dir + "/";
    shard.append(stem).append("-").append(five_digits(k)).append("-of-").append(total).append(ext);
    if (!s.present.contains(shard)) {
      return false;
    }
  }
  return true;
}

std::string mmproj_beside(const Snapshot& s, const std::string& main) {
  const std::string dir = dirname(main);
  for (const auto& rel : s.present) {
    if (dirname(rel) == dir && is_gguf_name(basename(rel)) && is_mmproj_name(basename(rel))) {
      return rel;
    }
  }
  return {};
}

// The usable model files of a snapshot: first shards (complete) and single
// files, sorted.
std::vector<std::pair<std::string, GgufNameParts>> model_files(const Snapshot& s) {
  std::vector<std::pair<std::string, GgufNameParts>> out;
  for (const auto& rel : s.present) {
    if (!is_model_file(rel)) {
      continue;
    }
    auto parts = gguf_name_parts(basename(rel));
    if (!parts || parts->index != 1 || !shards_present(s, rel, *parts)) {
      continue;
    }
    out.emplace_back(rel, std::move(*parts));
  }
  return out;
}

}  // namespace

std::optional<GgufNameParts> gguf_name_parts(std::string_view filename) {
  if (!is_gguf_name(filename)) {
    return std::nullopt;
  }
  GgufNameParts parts;
  std::string prefix(filename.substr(0, filename.size() - 5));
  // "-00001-of-00003": 15 characters.
  constexpr std::size_t kShard = 15;
  if (prefix.size() > kShard) {
    const std::string_view tail = std::string_view(prefix).substr(prefix.size() - kShard);
    const bool digits = std::all_of(tail.begin() + 1, tail.begin() + 6, ::isdigit) &&
                        std::all_of(tail.begin() + 10, tail.end(), ::isdigit);
    if (tail[0] == '-' && digits && hub_upper(tail.substr(6, 4)) == "-OF-") {
      parts.index = std::stoi(std::string(tail.substr(1, 5)));
      parts.count = std::stoi(std::string(tail.substr(10, 5)));
      prefix.resize(prefix.size() - kShard);
    }
  }
  std::size_t start = prefix.size();
  while (start > 0 && tag_char(prefix[start - 1])) {
    --start;
  }
  if (start > 0 && start < prefix.size() &&
      (prefix[start - 1] == '-' || prefix[start - 1] == '.')) {
    parts.tag = hub_upper(std::string_view(prefix).substr(start));
  }
  parts.prefix = std::move(prefix);
  return parts;
}

bool is_hub_model_name(std::string_view name) {
  for (std::string_view ours : {"user.", "extra.", "preset."}) {
    if (name.starts_with(ours)) {
      return false;
    }
  }
  const auto colon = name.find(':');
  const std::string_view repo = name.substr(0, colon);
  const auto slash = repo.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == repo.size() ||
      repo.find('/', slash + 1) != std::string_view::npos) {
    return false;
  }
  for (char c : repo) {
    if (c != '/' && !name_char(c)) {
      return false;
    }
  }
  if (colon == std::string_view::npos) {
    return true;
  }
  const std::string_view tag = name.substr(colon + 1);
  return !tag.empty() &&
         std::all_of(tag.begin(), tag.end(), [](char c) { return tag_char(c) || c == '-'; });
}

std::string canonical_hub_name(std::string_view name) {
  const auto colon = name.find(':');
  if (colon == std::string_view::npos) {
    return std::string(name);
  }
  return std::string(name.substr(0, colon + 1)) + hub_upper(name.substr(colon + 1));
}

std::vector<HubGguf> list_hub_ggufs(const fs::path& hub) {
  std::map<std::string, HubGguf> found;
  std::error_code ec;
  for (auto it = fs::directory_iterator(hub, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string repo = repo_of_folder(it->path().filename().string());
    if (repo.empty()) {
      continue;
    }
    auto snap = read_snapshot(hub, repo);
    if (!snap) {
      continue;
    }
    for (const auto& [rel, parts] : model_files(*snap)) {
      if (parts.tag.empty()) {
        continue;
      }
      const std::string name = repo + ":" + parts.tag;
      if (!found.contains(name)) {
        found[name] = HubGguf{name, repo, rel, mmproj_beside(*snap, rel)};
      }
    }
  }
  std::vector<HubGguf> out;
  out.reserve(found.size());
  for (auto& [name, gguf] : found) {
    out.push_back(std::move(gguf));
  }
  return out;
}

std::optional<HubGguf> find_hub_gguf(const fs::path& hub, std::string_view name) {
  if (!is_hub_model_name(name) || hub.empty()) {
    return std::nullopt;
  }
  const auto ref = hf::split_checkpoint(name);
  auto snap = read_snapshot(hub, ref.repo);
  if (!snap) {
    return std::nullopt;
  }
  const auto files = model_files(*snap);
  std::vector<std::string> tags;
  if (!ref.variant.empty()) {
    tags.push_back(ref.variant);
  } else {
    tags = {"Q4_K_M", "Q8_0"};
  }
  std::optional<std::string> chosen;
  for (const auto& tag : tags) {
    for (const auto& [rel, parts] : files) {
      if (path_names_tag(rel, tag)) {
        chosen = rel;
        break;
      }
    }
    if (chosen) {
      break;
    }
  }
  if (!chosen && ref.variant.empty() && !files.empty()) {
    chosen = files.front().first;
  }
  if (!chosen) {
    return std::nullopt;
  }
  return HubGguf{canonical_hub_name(name), ref.repo, *chosen, mmproj_beside(*snap, *chosen)};
}

ModelInfo hub_gguf_model(const HubGguf& gguf) {
  ModelInfo info;
  info.name = gguf.name;
  info.recipe = "llamacpp";
  info.source = ModelSource::kUser;
  info.checkpoints["main"] = gguf.repo + ":" + gguf.main;
  if (!gguf.mmproj.empty()) {
    info.checkpoints["mmproj"] = gguf.repo + ":" + gguf.mmproj;
    info.labels.push_back("vision");
  }
  info.type = ModelType::kLlm;
  return info;
}

ModelInfo hub_variant_model(std::string_view name) {
  ModelInfo info;
  info.name = canonical_hub_name(name);
  info.recipe = "llamacpp";
  info.source = ModelSource::kUser;
  info.checkpoints["main"] = info.name;
  info.type = ModelType::kLlm;
  return info;
}

// A member of ModelCatalogue: the hub cache's GGUFs as llama.cpp lists them.
std::vector<ModelInfo> ModelCatalogue::hub_models() const {
  std::vector<ModelInfo> out;
  for (const auto& gguf : list_hub_ggufs(sources_.hf_hub_cache)) {
    out.push_back(hub_gguf_model(gguf));
  }
  return out;
}

}  // namespace lemon
