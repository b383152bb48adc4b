// GenerationDefaults: POST /params (Lemonade 9.4.1 registers the route but
// stores nothing). Here it sets sampling defaults for chat, completions and
// responses requests that leave the fields out.
#include <cmath>

#include "lemon/http/api_server.h"

namespace lemon::http {
namespace {

struct Rule {
  const char* key;
  bool integer;
  double min;
  double max;
};

constexpr Rule kRules[] = {
    {"temperature", false, 0.0, 100.0},
    {"top_p", false, 0.0, 1.0},
    {"top_k", true, 0.0, 1e9},
    {"min_p", false, 0.0, 1.0},
    {"repeat_penalty", false, 0.0, 100.0},
    {"presence_penalty", false, -2.0, 2.0},
    {"frequency_penalty", false, -2.0, 2.0},
    {"max_tokens", true, 1.0, 1e9},
    {"seed", true, -1e18, 1e18},
};

Error bad(const std::string& key, const std::string& why) {
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
          return bad(key, "must be a string or a list of at most 16 strings");
        }
      }
      return std::nullopt;
    }
    return bad(key, "must be a string or a list of at most 16 strings");
  }
  for (const auto& rule : kRules) {
    if (key != rule.key) {
      continue;
    }
    if (!value.is_number() || (rule.integer && !value.is_number_integer())) {
      return bad(key, rule.integer ? "must be an integer" : "must be a number");
    }
    const double v = value.get<double>();
    if (!std::isfinite(v) || v < rule.min || v > rule.max) {
      return bad(key, "is out of range");
    }
    return std::nullopt;
  }
  return bad(key,
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
  std::lock_guard lock(mu_);
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
  std::lock_guard lock(mu_);
  return values_;
}

bool GenerationDefaults::apply(nlohmann::json& body) const {
  if (!any_.load()) {
    return false;
  }
  std::lock_guard lock(mu_);
  bool changed = false;
  for (const auto& [key, value] : values_.items()) {
    if (!body.contains(key)) {
      body[key] = value;
      changed = true;
    }
  }
  return changed;
}

}  // namespace lemon::http
