#include "lemon/inference/backend_usage.h"

#include <string.h>  // memrchr, a GNU extension

#include <array>
#include <climits>
#include <cstddef>
#include <optional>
#include <span>
#include <string>

namespace lemon::inference {

namespace {

using nlohmann::json;

// The numbers read from a backend's answer.
enum class Figure : std::size_t {
  // llama.cpp's `timings`
  kPromptN,
  kPredictedN,
  kPromptMs,
  kPredictedPerSecond,
  kCacheN,
  // `usage`: OpenAI, the Responses API, FLM
  kPromptTokens,
  kInputTokens,
  kCompletionTokens,
  kOutputTokens,
  kPrefillDurationTtft,
  kDecodingSpeedTps,
  kCount,
};

struct NamedFigure {
  std::string_view name;
  Figure figure;
};

// The figures an object holds, by member name.
using FigureNames = std::span<const NamedFigure>;

constexpr NamedFigure kTimingsNames[] = {{"prompt_n", Figure::kPromptN},
                                         {"predicted_n", Figure::kPredictedN},
                                         {"prompt_ms", Figure::kPromptMs},
                                         {"predicted_per_second", Figure::kPredictedPerSecond},
                                         {"cache_n", Figure::kCacheN}};
constexpr NamedFigure kUsageNames[] = {{"prompt_tokens", Figure::kPromptTokens},
                                       {"input_tokens", Figure::kInputTokens},
                                       {"completion_tokens", Figure::kCompletionTokens},
                                       {"output_tokens", Figure::kOutputTokens},
                                       {"prefill_duration_ttft", Figure::kPrefillDurationTtft},
                                       {"decoding_speed_tps", Figure::kDecodingSpeedTps}};
constexpr FigureNames kTimings{kTimingsNames};
constexpr FigureNames kUsage{kUsageNames};

// A value for each figure the backend sent as a number.
using Figures = std::array<std::optional<double>, static_cast<std::size_t>(Figure::kCount)>;

std::optional<double>& at(Figures& figures, Figure f) {
  return figures[static_cast<std::size_t>(f)];
}
const std::optional<double>& at(const Figures& figures, Figure f) {
  return figures[static_cast<std::size_t>(f)];
}

std::optional<Figure> figure_named(const FigureNames& names, std::string_view key) {
  for (const auto& named : names) {
    if (named.name == key) {
      return named.figure;
    }
  }
  return std::nullopt;
}

int clamped_int(double v) {
  if (v >= static_cast<double>(INT_MAX)) {
    return INT_MAX;
  }
  if (v <= static_cast<double>(INT_MIN)) {
    return INT_MIN;
  }
  return static_cast<int>(v);
}

void take(const std::optional<double>& value, int& out, bool only_if_unset) {
  if (value && !(only_if_unset && out != 0)) {
    out = clamped_int(*value);
  }
}

void take(const std::optional<double>& value, double& out, bool only_if_unset) {
  if (value && !(only_if_unset && out != 0.0)) {
    out = *value;
  }
}

// The rules, one place for both readers: `timings` first, then `usage`,
// whose other names fill only what is still unset.
void apply_figures(const Figures& f, RequestStats& s) {
  take(at(f, Figure::kPromptN), s.input_tokens, false);
  take(at(f, Figure::kPredictedN), s.output_tokens, false);
  if (const auto& ms = at(f, Figure::kPromptMs); ms && *ms > 0.0) {
    s.time_to_first_token = *ms / 1000.0;
  }
  take(at(f, Figure::kPredictedPerSecond), s.tokens_per_second, false);
  if (const auto& cached = at(f, Figure::kCacheN)) {
    s.cache_tokens = clamped_int(*cached);
  }

  take(at(f, Figure::kPromptTokens), s.prompt_tokens, false);
  take(at(f, Figure::kInputTokens), s.prompt_tokens, true);  // Responses API naming
  take(at(f, Figure::kPromptTokens), s.input_tokens, true);
  take(at(f, Figure::kInputTokens), s.input_tokens, true);
  take(at(f, Figure::kCompletionTokens), s.output_tokens, true);
  take(at(f, Figure::kOutputTokens), s.output_tokens, true);
  take(at(f, Figure::kPrefillDurationTtft), s.time_to_first_token, true);
  take(at(f, Figure::kDecodingSpeedTps), s.tokens_per_second, true);
}

// From a parsed object: its members that `names` lists and that are numbers.
void read_members(const json& object, const FigureNames& names, Figures& out) {
  for (const auto& named : names) {
    auto it = object.find(named.name);
    if (it != object.end() && it->is_number()) {
      at(out, named.figure) = it->get<double>();
    }
  }
}

// An nlohmann SAX handler that keeps the numbers directly inside the
// object it reads, for the figures `names` lists. As in a DOM, a member
// given twice counts with its last value.
class MemberNumbers {
 public:
  explicit MemberNumbers(const FigureNames& names) : names_(names) {}

  const Figures& found() const { return found_; }

  bool null() { return value(std::nullopt); }
  bool boolean(bool /*value*/) { return value(std::nullopt); }
  bool number_integer(json::number_integer_t v) { return value(static_cast<double>(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return value(static_cast<double>(v)); }
  bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return value(v); }
  bool string(json::string_t& /*text*/) { return value(std::nullopt); }
  bool binary(json::binary_t& /*bytes*/) { return value(std::nullopt); }
  bool start_object(std::size_t /*elements*/) { return open(); }
  bool end_object() { return close(); }
  bool start_array(std::size_t /*elements*/) { return open(); }
  bool end_array() { return close(); }
  bool key(json::string_t& name) {
    if (depth_ == 1) {
      member_ = figure_named(names_, name);
    }
    return true;
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& /*error*/) {
    return false;
  }

 private:
  // A member's value at depth 1: a number, or something else that clears
  // an earlier number of the same name.
  bool value(std::optional<double> v) {
    if (depth_ == 1 && member_) {
      at(found_, *member_) = v;
    }
    return true;
  }
  bool open() {
    value(std::nullopt);  // an object or array as a member's value
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }

  const FigureNames& names_;
  Figures found_;
  int depth_ = 0;
  std::optional<Figure> member_;
};

// The last `key` (which starts with a quote) in `body`: jumps from quote to
// quote backwards (memrchr) instead of comparing at every byte, as
// string_view::rfind does; runs for every answer.
std::size_t rfind_quoted(std::string_view body, std::string_view key) {
  std::size_t end = body.size();
  while (end > 0) {
    const void* hit = ::memrchr(body.data(), '"', end);
    if (hit == nullptr) {
      break;
    }
    const auto at = static_cast<std::size_t>(static_cast<const char*>(hit) - body.data());
    if (body.substr(at, key.size()) == key) {
      return at;
    }
    end = at;
  }
  return std::string_view::npos;
}

// Reads the value after the last `"key":` in `body` into `out`, as far as
// that value goes (the rest of the answer is not read). A value that is
// not a well-formed object counts as absent.
void read_value_after(std::string_view body, std::string_view key, const FigureNames& names,
                      Figures& out) {
  const std::size_t key_at = rfind_quoted(body, key);
  if (key_at == std::string_view::npos) {
    return;
  }
  MemberNumbers reader(names);
  if (!json::sax_parse(body.substr(key_at + key.size()), &reader, json::input_format_t::json,
                       /*strict=*/false)) {
    return;
  }
  for (const auto& named : names) {
    at(out, named.figure) = at(reader.found(), named.figure);
  }
}

void fill_prompt_tokens(RequestStats& s) {
  if (s.prompt_tokens == 0) {
    s.prompt_tokens = s.input_tokens;
  }
}

}  // namespace

void stats_from_backend_json(const json& j, RequestStats& s) {
  Figures figures;
  if (auto t = j.find("timings"); t != j.end() && t->is_object()) {
    read_members(*t, kTimings, figures);
  }
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    read_members(*u, kUsage, figures);
  }
  apply_figures(figures, s);
  if (auto r = j.find("response"); r != j.end() && r->is_object()) {
    stats_from_backend_json(*r, s);  // response.completed events nest the usage
  }
  fill_prompt_tokens(s);
}

void stats_from_answer(std::string_view body, RequestStats& s) {
  Figures figures;
  read_value_after(body, "\"timings\":", kTimings, figures);
  read_value_after(body, "\"usage\":", kUsage, figures);
  apply_figures(figures, s);
  fill_prompt_tokens(s);
}

}  // namespace lemon::inference
