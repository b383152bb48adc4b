#include "lemon/router/profile_plan.h"

#include <algorithm>
#include <set>

#include "lemon/models/recipe_options.h"

namespace lemon {
namespace {

Error profile_error(const std::string& path, const std::string& what) {
  return Error(ErrorCode::kInvalidRequest, path + ": " + what);
}

// `base` + "." + `name`, a JSON path.
std::string path_of(const std::string& base, const std::string& name) {
  std::string out = base;
  out.append(".").append(name);
  return out;
}

Result<std::vector<std::string>> name_list(const nlohmann::json& entry, const char* field,
                                           const std::string& path) {
  std::vector<std::string> out;
  auto it = entry.find(field);
  if (it == entry.end() || it->is_null()) {
    return out;
  }
  const std::string at = path + "." + field;
  if (!it->is_array()) {
    return profile_error(at, "expected a list of model names");
  }
  std::set<std::string> seen;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const auto& name = (*it)[i];
    if (!name.is_string() || name.get<std::string>().empty()) {
      return profile_error(at + "[" + std::to_string(i) + "]", "expected a model name");
    }
    if (!seen.insert(name.get<std::string>()).second) {
      return profile_error(at + "[" + std::to_string(i) + "]", "named twice");
    }
    out.push_back(name.get<std::string>());
  }
  return out;
}

Result<Profile> parse_profile(const nlohmann::json& entry, const std::string& path) {
  if (!entry.is_object()) {
    return profile_error(path, "expected an object {models, pinned, options}");
  }
  for (const auto& [field, value] : entry.items()) {
    if (field != "models" && field != "pinned" && field != "options") {
      return profile_error(path_of(path, field),
                           "is not a profile field (models, pinned, options)");
    }
  }
  Profile p;
  auto models = name_list(entry, "models", path);
  if (!models.ok()) {
    return std::move(models).error();
  }
  p.models = std::move(*models);
  auto pinned = name_list(entry, "pinned", path);
  if (!pinned.ok()) {
    return std::move(pinned).error();
  }
  for (std::size_t i = 0; i < pinned->size(); ++i) {
    if (std::find(p.models.begin(), p.models.end(), (*pinned)[i]) == p.models.end()) {
      return profile_error(path + ".pinned[" + std::to_string(i) + "]",
                           "'" + (*pinned)[i] + "' is not in the profile's models");
    }
  }
  p.pinned = std::move(*pinned);
  if (auto options = entry.find("options"); options != entry.end() && !options->is_null()) {
    if (!options->is_object()) {
      return profile_error(path + ".options", "expected an object {model: {load options}}");
    }
    for (const auto& [model, values] : options->items()) {
      const std::string at = path_of(path_of(path, "options"), model);
      if (std::find(p.models.begin(), p.models.end(), model) == p.models.end()) {
        return profile_error(at, "'" + model + "' is not in the profile's models");
      }
      if (!values.is_object()) {
        return profile_error(at, "expected an object of load options (ctx_size, ...)");
      }
      const auto& known = RecipeOptions::all_keys();
      for (const auto& [key, value] : values.items()) {
        if (std::find(known.begin(), known.end(), key) == known.end()) {
          return profile_error(path_of(at, key), "is not a load option");
        }
      }
      if (auto checked = RecipeOptions::from_json("", values); !checked.ok()) {
        return profile_error(at, checked.error().message());
      }
      p.options[model] = values;
    }
  }
  return p;
}

}  // namespace

Result<Profiles> parse_profiles(const nlohmann::json& section) {
  Profiles out;
  if (section.is_null()) {
    return out;
  }
  if (!section.is_object()) {
    return profile_error("profiles", "expected an object {name: {models, pinned, options}}");
  }
  for (const auto& [name, entry] : section.items()) {
    if (name.empty()) {
      return profile_error("profiles", "a profile needs a name");
    }
    auto p = parse_profile(entry, "profiles." + name);
    if (!p.ok()) {
      return std::move(p).error();
    }
    out[name] = std::move(*p);
  }
  return out;
}

ProfilePlan plan_profile(const Profile& profile, const std::vector<LoadedModelState>& loaded) {
  auto in = [](const std::vector<std::string>& list, const std::string& name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  ProfilePlan plan;
  std::set<std::string> seen;
  for (const auto& m : loaded) {
    if (!seen.insert(m.name).second) {
      continue;  // replicas of one model
    }
    if (!in(profile.models, m.name)) {
      plan.unload.push_back(m.name);
    } else if (m.pinned && !in(profile.pinned, m.name)) {
      plan.unpin.push_back(m.name);
    }
  }
  for (const auto& model : profile.models) {
    ProfilePlan::Load load;
    load.model = model;
    load.pinned = in(profile.pinned, model);
    if (auto it = profile.options.find(model); it != profile.options.end()) {
      load.options = it->second;
    }
    plan.load.push_back(std::move(load));
  }
  return plan;
}

}  // namespace lemon
