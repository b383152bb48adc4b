#include "lemon/models/model_names.h"

namespace lemon {

namespace {

constexpr std::string_view kLatest = ":latest";
constexpr std::string_view kGguf = ".gguf";

bool ends_with_gguf(std::string_view name) {
  return name.size() > kGguf.size() && name.substr(name.size() - kGguf.size()) == kGguf;
}

void add_candidates(std::string_view name, std::vector<NameCandidate>& out) {
  if (name.starts_with(kBuiltinPrefix)) {
    out.push_back({std::string(name.substr(kBuiltinPrefix.size())), true});
    return;
  }
  if (name.starts_with(kExtraPrefix)) {
    if (!ends_with_gguf(name)) {
      out.push_back({std::string(name) + std::string(kGguf), false});
    }
    return;
  }
  if (name.starts_with(kUserPrefix)) {
    return;
  }
  const std::string bare(name);
  out.push_back({std::string(kUserPrefix) + bare, false});
  if (!ends_with_gguf(name)) {
    out.push_back({std::string(kExtraPrefix) + bare + std::string(kGguf), false});
  }
  out.push_back({std::string(kExtraPrefix) + bare, false});
}

}  // namespace

std::vector<NameCandidate> name_candidates(std::string_view input) {
  std::vector<NameCandidate> out;
  out.push_back({std::string(input), false});
  add_candidates(input, out);
  if (input.size() > kLatest.size() && input.substr(input.size() - kLatest.size()) == kLatest) {
    const std::string_view base = input.substr(0, input.size() - kLatest.size());
    out.push_back({std::string(base), false});
    add_candidates(base, out);
  }
  return out;
}

bool is_reserved_model_name(std::string_view name) {
  if (name.starts_with(kUserPrefix)) {
    name.remove_prefix(kUserPrefix.size());
  }
  return name.starts_with(kBuiltinPrefix) || name.starts_with(kExtraPrefix);
}

Status check_registration_name(std::string_view name) {
  if (!is_reserved_model_name(name)) {
    return ok_status();
  }
  return Error(ErrorCode::kReservedModelName,
               "model names starting with 'builtin.' or 'extra.' (also after 'user.') are "
               "reserved for built-in and discovered models; got '" +
                   std::string(name) + "'",
               "model_name");
}

std::string canonical_model_id(const ModelInfo& info) {
  switch (info.source) {
    case ModelSource::kBuiltIn:
      return std::string(kBuiltinPrefix) + info.name;
    case ModelSource::kExtraDir:
      return ends_with_gguf(info.name) ? info.name.substr(0, info.name.size() - kGguf.size())
                                       : info.name;
    case ModelSource::kUser:
    case ModelSource::kUserLocalPath:
    case ModelSource::kUserLocalUpload:
      break;
  }
  return info.name;
}

std::string public_model_id(const ModelInfo& info, bool builtin_named) {
  const bool user = info.source == ModelSource::kUser ||
                    info.source == ModelSource::kUserLocalPath ||
                    info.source == ModelSource::kUserLocalUpload;
  if (user && info.name.starts_with(kUserPrefix) && !builtin_named) {
    return info.name.substr(kUserPrefix.size());
  }
  return info.name;
}

nlohmann::ordered_json canonical_option_keys(
    const nlohmann::ordered_json& file, const std::function<bool(const std::string&)>& is_builtin,
    int& moved) {
  nlohmann::ordered_json migrated = nlohmann::ordered_json::object();
  moved = 0;
  for (const auto& [key, value] : file.items()) {
    const bool builtin_key = !key.starts_with(kUserPrefix) && !key.starts_with(kExtraPrefix) &&
                             !key.starts_with(kBuiltinPrefix) && is_builtin(key);
    const std::string to = builtin_key ? std::string(kBuiltinPrefix) + key : key;
    if (builtin_key && file.contains(to)) {
      continue;  // both forms: the canonical one stays
    }
    moved += builtin_key ? 1 : 0;
    migrated[to] = value;
  }
  return migrated;
}

}  // namespace lemon
