// Fuzz target: the JSON request checks of every route. The body goes through
// what the handlers do with a client's JSON: parse_json_object, the field
// checks of each inference route, the max_completion_tokens mapping, the
// model/load request parser, recipe options of every recipe, user model
// registration, the Anthropic Messages and Ollama request translations, and
// preset entries. Every error must render as a valid JSON envelope, even when
// the input quotes invalid UTF-8 back, and every translated body must
// serialize.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/api/anthropic/anthropic_request.h"
#include "lemon/api/ollama/ollama_request.h"
#include "lemon/api/openai/request_checks.h"
#include "lemon/backends/wrapped_server.h"
#include "lemon/http/error_response.h"
#include "lemon/http/json_request.h"
#include "lemon/models/preset.h"
#include "lemon/models/recipe_options.h"
#include "lemon/models/user_registration.h"

using namespace lemon;

namespace {

void envelope_is_json(const Error& e) {
  std::string text = error_envelope(e);
  if (!nlohmann::json::accept(text)) {
    std::abort();
  }
}

constexpr ApiRoute kRoutes[] = {ApiRoute::kChatCompletions, ApiRoute::kCompletions,
                                ApiRoute::kResponses,       ApiRoute::kEmbeddings,
                                ApiRoute::kReranking,       ApiRoute::kImageGenerations};

// A translation either fails with a valid envelope or gives a body that
// serializes.
template <typename T, typename Body>
void translated(const Result<T>& r, Body body) {
  if (!r.ok()) {
    envelope_is_json(r.error());
  } else {
    (void)http::json_text(body(*r));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  if (auto req = http::parse_model_request(body); !req.ok()) {
    envelope_is_json(req.error());
  }
  auto parsed = http::parse_json_object(body);
  if (!parsed.ok()) {
    envelope_is_json(parsed.error());
    return 0;
  }
  for (ApiRoute route : kRoutes) {
    if (auto checked = api::check_request(route, *parsed); !checked.ok()) {
      envelope_is_json(checked.error());
    }
  }
  nlohmann::json copy = *parsed;
  (void)api::map_max_completion_tokens(copy);
  for (const char* recipe : {"", "llamacpp", "flm", "whispercpp", "sd-cpp", "ryzenai-llm"}) {
    auto options = RecipeOptions::from_json(recipe, *parsed);
    if (!options.ok()) {
      envelope_is_json(options.error());
    } else {
      (void)options->ctx_size();
      (void)options->inherit(RecipeOptions::defaults()).to_json().dump();
    }
  }
  translated(api::anthropic_to_chat(*parsed),
             [](const api::AnthropicRequest& a) { return a.chat; });
  translated(api::anthropic_count_tokens_text(*parsed),
             [](const api::AnthropicCountRequest& c) { return nlohmann::json(c.text); });
  auto ollama_body = [](const api::OllamaRequest& o) { return o.openai; };
  translated(api::ollama_chat_request(*parsed), ollama_body);
  translated(api::ollama_generate_request(*parsed), ollama_body);
  translated(api::ollama_embed_request(*parsed, true), ollama_body);
  translated(api::ollama_embed_request(*parsed, false), ollama_body);
  if (auto preset = parse_preset("fuzz", *parsed); !preset.ok()) {
    envelope_is_json(preset.error());
  } else {
    nlohmann::json chat = {{"messages", nlohmann::json::array()}};
    (void)apply_preset_defaults(*preset, chat);
    (void)http::json_text(chat);
    (void)preset->server_name();
    (void)preset->to_json().dump();
  }
  if (has_registration_fields(*parsed)) {
    auto reg = parse_user_registration("user.fuzz", *parsed);
    if (!reg.ok()) {
      envelope_is_json(reg.error());
    }
  }
  return 0;
}
