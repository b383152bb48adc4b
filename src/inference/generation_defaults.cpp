// GenerationDefaults: POST /params (Lemonade 9.4.1 registers the route but
// stores nothing). Here it sets sampling defaults for chat, completions and
// responses requests that leave the fields out.
#include "lemon/inference/generation_defaults.h"

#include "lemon/core/mutex.h"
#include "lemon/models/sampling_rule.h"

namespace lemon::inference {

namespace {

Error bad_default(const std::string& key, const std::string& why) {
  return Error(ErrorCode::kInvalidRequest, "'" + key + "' " + why, key);
}

std::optional<Error> check(const std::string& key, const nlohmann::json& value) {
  if (key == "stop") {
    if (value.is_string()) {
      return std::nullopt;
    }
    if (value.is_array() && value.size() <= 16) {
      for (const auto& s : value) {
        if (!s.is_string()) {
          return bad_default(key, "must be a string or a list of at most 16 strings");
        }
      }
      return std::nullopt;
    }
    return bad_default(key, "must be a string or a list of at most 16 strings");
  }
  if (const SamplingRule* rule = find_sampling_rule(key)) {
    if (auto problem = sampling_value_problem(*rule, value)) {
      return bad_default(key, *problem);
    }
    return std::nullopt;
  }
  return bad_default(
      key,
      "is not a generation parameter (temperature, top_p, top_k, min_p, repeat_penalty, "
      "presence_penalty, frequency_penalty, max_tokens, seed, stop)");
}

}  // namespace

Result<nlohmann::json> GenerationDefaults::update(const nlohmann::json& changes) {
  for (const auto& [key, value] : changes.items()) {
    if (!value.is_null()) {
      if (auto problem = check(key, value)) {
        return *problem;
      }
    }
  }
  MutexLock lock(mu_);
  for (const auto& [key, value] : changes.items()) {
    if (value.is_null()) {
      values_.erase(key);
    } else {
      values_[key] = value;
    }
  }
  any_.store(!values_.empty());
  return values_;
}

nlohmann::json GenerationDefaults::get() const {
  MutexLock lock(mu_);
  return values_;
}

bool GenerationDefaults::apply(nlohmann::json& body) const {
  if (!any_.load()) {
    return false;
  }
  MutexLock lock(mu_);
  bool changed = false;
  for (const auto& [key, value] : values_.items()) {
    if (!body.contains(key)) {
      body[key] = value;
      changed = true;
    }
  }
  return changed;
}

}  // namespace lemon::inference
