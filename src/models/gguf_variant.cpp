#include "lemon/models/gguf_variant.h"
#include "lemon/core/text.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

namespace lemon {
namespace {

bool ends_with_ci(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         ascii_lower(s.substr(s.size() - suffix.size())) == ascii_lower(suffix);
}

std::string_view file_name(std::string_view rel) {
  auto slash = rel.rfind('/');
  return slash == std::string_view::npos ? rel : rel.substr(slash + 1);
}

std::string_view dir_part(std::string_view rel) {
  auto slash = rel.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : rel.substr(0, slash + 1);
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

// "<prefix>-<index>-of-<total>.gguf", e.g. "model-Q4_K_M-00001-of-00003.gguf".
struct ShardName {
  std::string prefix;     // "model-Q4_K_M"
  std::string index;      // "00001"
  std::string total;      // "00003"
  std::string extension;  // ".gguf" as spelled in the file name
};

std::optional<ShardName> parse_shard(std::string_view name) {
  if (!is_gguf_name(name)) {
    return std::nullopt;
  }
  std::string_view stem = name.substr(0, name.size() - 5);
  auto of = ascii_lower(stem).rfind("-of-");
  if (of == std::string::npos) {
    return std::nullopt;
  }
  std::string_view total = stem.substr(of + 4);
  std::string_view head = stem.substr(0, of);
  auto dash = head.rfind('-');
  if (dash == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view index = head.substr(dash + 1);
  // llama.cpp's gguf-split writes 5 digits; longer numbers are not shards.
  if (!all_digits(index) || !all_digits(total) || index.size() > 5 || total.size() > 5) {
    return std::nullopt;
  }
  return ShardName{std::string(head.substr(0, dash)), std::string(index), std::string(total),
                   std::string(name.substr(name.size() - 5))};
}

class Chooser {
 public:
  explicit Chooser(const std::vector<hf::SnapshotFile>& listing) : listing_(listing) {
    for (const auto& f : listing_) {
      by_lower_rel_.emplace(ascii_lower(f.rel), &f);
      auto name = file_name(f.rel);
      if (is_gguf_name(name) && !is_mmproj_name(name)) {
        candidates_.push_back(&f);  // listing is sorted, so candidates are too
      }
    }
  }

  GgufChoice choose(std::string_view variant) const {
    if (variant == "*") {
      return take_all(candidates_, "*.gguf");
    }
    if (ends_with_ci(variant, ".gguf") || ends_with_ci(variant, ".bin")) {
      return exact(variant);
    }
    if (variant.empty()) {
      if (candidates_.empty()) {
        return not_found("*.gguf");
      }
      return finish({candidates_.front()->rel});
    }
    const std::string pattern = "*" + std::string(variant) + ".gguf";
    const std::string suffix = ascii_lower(variant) + ".gguf";
    std::vector<std::string> by_suffix;
    std::vector<std::string> first_shards;
    std::vector<const hf::SnapshotFile*> in_folder;
    const std::string folder = ascii_lower(variant);
    for (const auto* f : candidates_) {
      std::string name = ascii_lower(file_name(f->rel));
      if (name.ends_with(suffix)) {
        by_suffix.push_back(f->rel);
      }
      auto shard = parse_shard(name);
      if (shard && std::stoul(shard->index) == 1 && shard->prefix.ends_with(folder)) {
        first_shards.push_back(f->rel);
      }
      std::string dirs = "/" + ascii_lower(dir_part(f->rel));
      if (dirs.find("/" + folder + "/") != std::string::npos) {
        in_folder.push_back(f);
      }
    }
    if (by_suffix.size() == 1) {
      return finish(by_suffix);
    }
    if (by_suffix.size() > 1) {
      return ambiguous(pattern, by_suffix);
    }
    if (first_shards.size() == 1) {
      return finish(first_shards);
    }
    if (first_shards.size() > 1) {
      return ambiguous("*" + std::string(variant) + "-00001-of-*.gguf", first_shards);
    }
    if (!in_folder.empty()) {
      return take_all(in_folder, pattern);
    }
    return not_found(pattern);
  }

 private:
  static GgufChoice not_found(std::string what) {
    GgufChoice c;
    c.missing.push_back(std::move(what));
    return c;
  }

  static GgufChoice ambiguous(const std::string& pattern, const std::vector<std::string>& rels) {
    return not_found(pattern + " (ambiguous: " + std::to_string(rels.size()) +
                     " files match: " + join(rels, ", ") + ")");
  }

  GgufChoice take_all(const std::vector<const hf::SnapshotFile*>& files,
                      const std::string& pattern) const {
    if (files.empty()) {
      return not_found(pattern);
    }
    std::vector<std::string> rels;
    rels.reserve(files.size());
    for (const auto* f : files) {
      rels.push_back(f->rel);
    }
    return finish(rels);
  }

  GgufChoice exact(std::string_view rel) const {
    for (const auto& f : listing_) {
      if (f.rel == rel) {
        return finish({f.rel});
      }
    }
    return not_found(std::string(rel));
  }

  // `needed` is non-empty, main first. Adds the sibling shards of a first
  // shard, then checks that every needed file is present.
  GgufChoice finish(std::vector<std::string> needed) const {
    GgufChoice c;
    const std::string main = needed.front();
    if (auto shard = parse_shard(file_name(main)); shard && std::stoul(shard->index) == 1) {
      const unsigned long total = std::stoul(shard->total);
      for (unsigned long k = 1; k <= total; ++k) {
        std::string index = std::to_string(k);
        if (index.size() < shard->index.size()) {
          index.insert(0, shard->index.size() - index.size(), '0');
        }
        std::string rel = std::string(dir_part(main)) + shard->prefix + "-" + index + "-of-" +
                          shard->total + shard->extension;
        auto it = by_lower_rel_.find(ascii_lower(rel));
        if (it != by_lower_rel_.end()) {
          rel = it->second->rel;
        }
        if (std::find(needed.begin(), needed.end(), rel) == needed.end()) {
          needed.push_back(rel);
        }
      }
    }
    for (const auto& rel : needed) {
      auto it = by_lower_rel_.find(ascii_lower(rel));
      hf::FileState state = it == by_lower_rel_.end() ? hf::FileState::kMissing : it->second->state;
      if (state != hf::FileState::kPresent) {
        c.missing.push_back(hf::describe(rel, state));
      }
    }
    std::sort(needed.begin() + 1, needed.end());
    c.files = std::move(needed);
    if (c.missing.empty()) {
      c.main = main;
    }
    return c;
  }

  const std::vector<hf::SnapshotFile>& listing_;
  std::map<std::string, const hf::SnapshotFile*> by_lower_rel_;
  std::vector<const hf::SnapshotFile*> candidates_;
};

}  // namespace

bool is_gguf_name(std::string_view name) {
  return ends_with_ci(name, ".gguf");
}

bool is_mmproj_name(std::string_view name) {
  return ascii_lower(name).find("mmproj") != std::string::npos;
}

GgufChoice choose_gguf(const std::vector<hf::SnapshotFile>& listing, std::string_view variant) {
  return Chooser(listing).choose(variant);
}

}  // namespace lemon
