// RecipeOptions: the load-time options of one model (ctx_size, parallel,
// llamacpp_backend, llamacpp_args, whispercpp_backend, sd-cpp_backend, steps,
// cfg_scale, width, height, and the router's max_replicas and gpu: the index
// of the one GPU a server may use, and llama.cpp's speculative: false turns
// the model's draft or multi-token prediction off for a load), restricted to
// the keys its recipe understands.
//
// Layering (seed 001 "Load Endpoint"): the load request, then the
// per-model recipe_options.json entry, then the CLI/environment value, then the
// built-in default. `-1` and `""` mean "unset" at every layer, as in Lemonade,
// except ctx_size's `-1` (also written "auto"): Lemonade 11's "fit the context
// to the device's memory", a value that overrides lower layers like any
// other and that the router resolves when it admits the load
// (router/context_fit.h).
//
// Thread-safety: value type.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/core/load_option_defaults.h"

namespace lemon {

// ctx_size's value for a context fitted to memory.
inline constexpr int kFittedContext = -1;
// Whether `v` asks for it: -1 or "auto".
bool is_fitted_context_value(const nlohmann::json& v);

class RecipeOptions {
 public:
  RecipeOptions() = default;

  // Every option key any recipe understands, in a stable order.
  static const std::vector<std::string>& all_keys();
  // The keys `recipe` understands (llamacpp: ctx_size, parallel,
  // llamacpp_backend, llamacpp_args, max_replicas, gpu, speculative; flm
  // and ryzenai-llm/oga-*: ctx_size; whispercpp: whispercpp_backend; sd-cpp:
  // sd-cpp_backend, steps, cfg_scale, width, height). Empty for an unknown
  // recipe.
  static std::vector<std::string> keys_for_recipe(std::string_view recipe);

  // Builds options from a JSON object, keeping only keys of `recipe` (or all
  // keys when recipe is empty) and dropping unset values. Fails with
  // kInvalidOption (param = key) when a value has the wrong JSON type or an
  // out-of-range value (ctx_size < 1, unknown backend name, ...).
  static Result<RecipeOptions> from_json(std::string_view recipe, const nlohmann::json& j);

  // The built-in defaults for every key (builtin_load_option_defaults():
  // ctx_size 4096, parallel 1, llamacpp_backend per platform, ...). Not
  // restricted to a recipe.
  static RecipeOptions defaults();

  // Returns a copy where keys unset here are taken from `lower`.
  RecipeOptions inherit(const RecipeOptions& lower) const;
  // Returns a copy holding only `recipe`'s keys.
  RecipeOptions restricted_to(std::string_view recipe) const;

  bool has(std::string_view key) const { return values_.contains(std::string(key)); }
  const nlohmann::json& raw() const { return values_; }
  nlohmann::json to_json() const { return values_; }

  // The context size; `fallback` when unset or fitted to memory.
  int ctx_size(int fallback = 4096) const;
  // ctx_size asks for the context fitted to memory (-1, "auto").
  bool fitted_context() const;
  // An integer option's value, or `fallback` when unset.
  int int_value(std::string_view key, int fallback) const;
  std::string string_value(std::string_view key) const;  // "" when unset
  // A boolean option's value, or `fallback` when unset.
  bool bool_value(std::string_view key, bool fallback) const;

  bool operator==(const RecipeOptions& other) const { return values_ == other.values_; }

 private:
  nlohmann::json values_ = nlohmann::json::object();
};

}  // namespace lemon
