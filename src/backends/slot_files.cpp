#include "lemon/backends/slot_files.h"

#include <algorithm>
#include <charconv>

#include <openssl/evp.h>

namespace lemon {
namespace {

std::string short_hash(std::string_view text, unsigned int bytes = 4) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(text.data(), text.size(), digest, &size, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < bytes && i < size; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0xF];
  }
  return out;
}

}  // namespace

std::string slot_model_folder(std::string_view model) {
  std::string safe;
  safe.reserve(model.size());
  for (char c : model) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '-' || c == '_';
    safe += plain ? c : '_';
  }
  if (safe.empty() || safe.front() == '.') {
    safe.insert(safe.begin(), '_');
  }
  return safe + "-" + short_hash(model);
}

std::string slot_identity_hash(std::string_view description) {
  return short_hash(description, 8);
}

std::string slot_file_name(SlotFileKey key) {
  const std::string base = "slot-" + std::to_string(key.slot) + ".bin";
  return key.replica == 0 ? base : "replica-" + std::to_string(key.replica) + "-" + base;
}

namespace {

// A canonical non-negative decimal (no sign, no leading zero), else nullopt.
std::optional<int> canonical_number(std::string_view digits) {
  int n = -1;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || n < 0 ||
      std::to_string(n) != digits) {
    return std::nullopt;
  }
  return n;
}

}  // namespace

std::optional<SlotFileKey> slot_of_file(std::string_view name) {
  constexpr std::string_view kReplica = "replica-";
  constexpr std::string_view kPrefix = "slot-";
  constexpr std::string_view kSuffix = ".bin";
  SlotFileKey key;
  if (name.starts_with(kReplica)) {
    name.remove_prefix(kReplica.size());
    const std::size_t dash = name.find('-');
    auto replica = canonical_number(name.substr(0, dash));
    if (dash == std::string_view::npos || !replica || *replica == 0) {
      return std::nullopt;
    }
    key.replica = *replica;
    name.remove_prefix(dash + 1);
  }
  if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) ||
      !name.ends_with(kSuffix)) {
    return std::nullopt;
  }
  auto slot =
      canonical_number(name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size()));
  if (!slot) {
    return std::nullopt;
  }
  key.slot = *slot;
  return key;
}

std::vector<SlotUse> parse_slot_uses(const nlohmann::json& slots) {
  std::vector<SlotUse> out;
  if (!slots.is_array()) {
    return out;
  }
  for (const auto& s : slots) {
    if (!s.is_object() || !s.contains("id") || !s["id"].is_number_integer()) {
      continue;
    }
    SlotUse use;
    use.id = s["id"].get<int>();
    use.busy = s.value("is_processing", false);
    if (auto t = s.find("n_prompt_tokens"); t != s.end() && t->is_number_integer()) {
      use.tokens = std::max<long long>(0, t->get<long long>());
    }
    out.push_back(use);
  }
  return out;
}

std::vector<int> slots_to_save(const std::vector<SlotUse>& slots,
                               const std::vector<int>& session_slots, long long min_tokens) {
  std::vector<int> out;
  for (const auto& s : slots) {
    const bool session =
        std::find(session_slots.begin(), session_slots.end(), s.id) != session_slots.end();
    if (!s.busy && s.tokens > 0 && (session || s.tokens >= min_tokens)) {
      out.push_back(s.id);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> files_over_budget(std::vector<CachedSlotFile> files,
                                           std::uint64_t budget) {
  std::sort(files.begin(), files.end(), [](const CachedSlotFile& a, const CachedSlotFile& b) {
    return a.used_ns != b.used_ns ? a.used_ns < b.used_ns : a.path < b.path;
  });
  std::uint64_t total = 0;
  for (const auto& f : files) {
    total += f.bytes;
  }
  std::vector<std::string> out;
  for (const auto& f : files) {
    if (total <= budget) {
      break;
    }
    out.push_back(f.path);
    total -= f.bytes;
  }
  return out;
}

std::uint64_t default_slot_cache_budget(std::uint64_t free_bytes) {
  constexpr std::uint64_t kMax = 32ULL << 30;
  return std::min(free_bytes / 10, kMax);
}

}  // namespace lemon
