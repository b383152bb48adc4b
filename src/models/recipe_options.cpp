#include "lemon/models/recipe_options.h"
#include "lemon/core/text.h"

#include <algorithm>
#include <limits>

namespace lemon {
namespace {

using nlohmann::json;

// Lemonade treats -1 (numbers) and "" (strings) as "not set" at every layer,
// except ctx_size's -1, a value of its own: the context fitted to memory
// (Lemonade 11). JSON null is unset too (POST /load reads a null as "skip
// the saved value", before the options are made).
bool is_unset_value(const json& v) {
  if (v.is_null()) {
    return true;
  }
  if (v.is_number_integer()) {
    return v.get<long long>() == -1;
  }
  if (v.is_number_float()) {
    return v.get<double>() == -1.0;
  }
  return v.is_string() && v.get_ref<const std::string&>().empty();
}

bool is_unset_value(const std::string& key, const json& v) {
  if (key == "ctx_size" && is_fitted_context_value(v)) {
    return false;
  }
  return is_unset_value(v);
}

bool contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

Error invalid(const std::string& key, const std::string& what) {
  return Error(ErrorCode::kInvalidOption, "invalid value for '" + key + "': " + what, key);
}

// A positive integer that fits in an int (ctx_size, steps, width, height).
Result<json> positive_int(const std::string& key, const json& v,
                          long long max = std::numeric_limits<int>::max()) {
  if (!v.is_number_integer()) {
    return invalid(key, "expected an integer, got " + v.dump());
  }
  // JSON text parses non-negative integers as unsigned; compare as such.
  if (v.is_number_unsigned()) {
    auto u = v.get<unsigned long long>();
    if (u < 1) {
      return invalid(key, "must be an integer >= 1, got " + v.dump());
    }
    if (u > static_cast<unsigned long long>(max)) {
      return invalid(key,
                     "value " + v.dump() + " is too large (at most " + std::to_string(max) + ")");
    }
    return json(static_cast<int>(u));
  }
  long long n = v.get<long long>();
  if (n < 1) {
    return invalid(key, "must be an integer >= 1, got " + v.dump());
  }
  if (n > max) {
    return invalid(key,
                   "value " + v.dump() + " is too large (at most " + std::to_string(max) + ")");
  }
  return json(static_cast<int>(n));
}

Result<json> one_of(const std::string& key, const json& v, const std::vector<std::string>& valid) {
  if (!v.is_string()) {
    return invalid(key, "expected a string, got " + v.dump());
  }
  const auto& s = v.get_ref<const std::string&>();
  if (!contains(valid, s)) {
    return invalid(key, "unknown backend '" + s + "' (valid: " + join(valid, ", ") + ")");
  }
  return v;
}

// Checks one set value and returns it in canonical form.
Result<json> validate(const std::string& key, const json& v) {
  if (key == "ctx_size" && is_fitted_context_value(v)) {
    return json(kFittedContext);
  }
  if (key == "ctx_size" || key == "steps" || key == "width" || key == "height") {
    return positive_int(key, v);
  }
  if (key == "parallel") {
    return positive_int(key, v, kMaxParallel);
  }
  if (key == "max_replicas") {
    return positive_int(key, v, kMaxReplicas);
  }
  if (key == "gpu") {
    // 0 is a valid index: checked here rather than with positive_int.
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 63) {
      return invalid(key, "expected a GPU index from 0 to 63, got " + v.dump());
    }
    return json(v.get<int>());
  }
  if (key == "cfg_scale") {
    if (!v.is_number()) {
      return invalid(key, "expected a number, got " + v.dump());
    }
    return json(v.get<double>());
  }
  if (key == "llamacpp_backend") {
    return one_of(key, v, valid_llamacpp_backends());
  }
  if (key == "whispercpp_backend") {
    return one_of(key, v, valid_whispercpp_backends());
  }
  if (key == "sd-cpp_backend") {
    return one_of(key, v, valid_sdcpp_backends());
  }
  if (key == "speculative") {
    if (!v.is_boolean()) {
      return invalid(key, "expected true or false, got " + v.dump());
    }
    return v;
  }
  if (key == "llamacpp_args") {
    if (!v.is_string()) {
      return invalid(key, "expected a string, got " + v.dump());
    }
    return v;
  }
  return invalid(key, "unknown option");
}

}  // namespace

bool is_fitted_context_value(const nlohmann::json& v) {
  return (v.is_number_integer() && v.get<long long>() == kFittedContext) ||
         (v.is_string() && v.get_ref<const std::string&>() == "auto");
}

const std::vector<std::string>& RecipeOptions::all_keys() {
  static const std::vector<std::string> keys = {
      "ctx_size",       "parallel", "llamacpp_backend", "llamacpp_args", "whispercpp_backend",
      "sd-cpp_backend", "steps",    "cfg_scale",        "width",         "height",
      "max_replicas",   "gpu",      "speculative"};
  return keys;
}

std::vector<std::string> RecipeOptions::keys_for_recipe(std::string_view recipe) {
  // max_replicas is the router's, for every recipe.
  if (recipe == "llamacpp") {
    return {"ctx_size",     "parallel", "llamacpp_backend", "llamacpp_args",
            "max_replicas", "gpu",      "speculative"};
  }
  if (recipe == "flm" || recipe == "ryzenai-llm" || recipe.starts_with("oga-")) {
    return {"ctx_size", "max_replicas"};
  }
  if (recipe == "whispercpp") {
    return {"whispercpp_backend", "max_replicas", "gpu"};
  }
  if (recipe == "sd-cpp") {
    return {"sd-cpp_backend", "steps", "cfg_scale", "width", "height", "max_replicas", "gpu"};
  }
  return {};
}

Result<RecipeOptions> RecipeOptions::from_json(std::string_view recipe, const json& j) {
  RecipeOptions out;
  if (j.is_null()) {
    return out;
  }
  if (!j.is_object()) {
    return Error(ErrorCode::kInvalidOption, "recipe options must be a JSON object, got " + j.dump(),
                 "recipe_options");
  }
  const std::vector<std::string> keys = recipe.empty() ? all_keys() : keys_for_recipe(recipe);
  for (const auto& key : keys) {
    auto it = j.find(key);
    if (it == j.end() || is_unset_value(key, *it)) {
      continue;
    }
    auto value = validate(key, *it);
    if (!value.ok()) {
      return std::move(value).error();
    }
    out.values_[key] = std::move(value).value();
  }
  return out;
}

RecipeOptions RecipeOptions::defaults() {
  RecipeOptions out;
  out.values_ = builtin_load_option_defaults();
  return out;
}

RecipeOptions RecipeOptions::inherit(const RecipeOptions& lower) const {
  RecipeOptions out = *this;
  for (const auto& [key, value] : lower.values_.items()) {
    auto mine = out.values_.find(key);
    if (mine == out.values_.end() || is_unset_value(key, *mine)) {
      out.values_[key] = value;
    }
  }
  return out;
}

RecipeOptions RecipeOptions::restricted_to(std::string_view recipe) const {
  RecipeOptions out;
  for (const auto& key : keys_for_recipe(recipe)) {
    auto it = values_.find(key);
    if (it != values_.end()) {
      out.values_[key] = *it;
    }
  }
  return out;
}

int RecipeOptions::ctx_size(int fallback) const {
  auto it = values_.find("ctx_size");
  if (it == values_.end() || !it->is_number_integer() || is_unset_value(*it)) {
    return fallback;
  }
  return it->get<int>();
}

bool RecipeOptions::fitted_context() const {
  auto it = values_.find("ctx_size");
  return it != values_.end() && is_fitted_context_value(*it);
}

int RecipeOptions::int_value(std::string_view key, int fallback) const {
  auto it = values_.find(std::string(key));
  if (it == values_.end() || !it->is_number_integer() || is_unset_value(*it)) {
    return fallback;
  }
  return it->get<int>();
}

bool RecipeOptions::bool_value(std::string_view key, bool fallback) const {
  auto it = values_.find(std::string(key));
  return it != values_.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

std::string RecipeOptions::string_value(std::string_view key) const {
  auto it = values_.find(std::string(key));
  if (it == values_.end() || is_unset_value(*it)) {
    return "";
  }
  return it->is_string() ? it->get<std::string>() : it->dump();
}

}  // namespace lemon
