#include "lemon/api/ollama/ollama_request.h"
#include "lemon/http/handler_support.h"
#include "lemon/http/request_fields.h"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <vector>

#include "lemon/core/duration_text.h"
#include "ollama_messages.h"

namespace lemon::api {

namespace {

using nlohmann::json;
using ollama::absent;
using ollama::chat_messages;
using ollama::with_images;

constexpr std::string_view kOllamaApi = "Ollama API";

// Sampling options and the chat completions field each becomes.
const std::map<std::string, std::string>& option_fields() {
  static const std::map<std::string, std::string> kFields = {
      {"temperature", "temperature"},
      {"top_p", "top_p"},
      {"top_k", "top_k"},
      {"min_p", "min_p"},
      {"typical_p", "typical_p"},
      {"seed", "seed"},
      {"repeat_penalty", "repeat_penalty"},
      {"repeat_last_n", "repeat_last_n"},
      {"presence_penalty", "presence_penalty"},
      {"frequency_penalty", "frequency_penalty"},
      {"mirostat", "mirostat"},
      {"mirostat_tau", "mirostat_tau"},
      {"mirostat_eta", "mirostat_eta"},
      {"num_keep", "n_keep"},
  };
  return kFields;
}

bool load_time_option(const std::string& key) {
  static const char* kLoadTime[] = {"num_ctx",  "num_batch", "num_gpu",    "main_gpu",
                                    "low_vram", "use_mmap",  "use_mlock",  "num_thread",
                                    "numa",     "f16_kv",    "vocab_only", "logits_all"};
  return std::any_of(std::begin(kLoadTime), std::end(kLoadTime),
                     [&](const char* k) { return key == k; });
}

Status apply_options(const json& body, json& chat) {
  auto options = body.find("options");
  if (options == body.end() || options->is_null()) {
    return ok_status();
  }
  if (!options->is_object()) {
    return bad_field("'options' must be an object", "options");
  }
  for (auto it = options->begin(); it != options->end(); ++it) {
    const std::string& key = it.key();
    const std::string field = "options." + key;
    const json& value = *it;
    if (value.is_null()) {
      continue;
    }
    if (key == "num_predict") {
      if (!value.is_number_integer()) {
        return bad_field("'options.num_predict' must be an integer", field);
      }
      if (value.get<long long>() > 0) {
        chat["max_tokens"] = value;
      } else if (value.get<long long>() == 0 || value.get<long long>() < -2) {
        return bad_field("'options.num_predict' must be positive, or -1 or -2 for no limit", field);
      }
      continue;
    }
    if (key == "stop") {
      const bool strings =
          value.is_string() ||
          (value.is_array() &&
           std::all_of(value.begin(), value.end(), [](const json& s) { return s.is_string(); }));
      if (!strings) {
        return bad_field("'options.stop' must be a string or an array of strings", field);
      }
      chat["stop"] = value.is_string() ? json::array({value}) : value;
      continue;
    }
    auto mapped = option_fields().find(key);
    if (mapped == option_fields().end()) {
      if (load_time_option(key)) {
        return bad_field(
            "'" + field +
                "' is a load-time setting that a request cannot change here; set it in "
                "the model's load options (POST /api/v1/load or recipe_options.json)",
            field);
      }
      return bad_field("'" + field + "' is not supported by lemonade-router's Ollama API", field);
    }
    if (!value.is_number()) {
      return bad_field("'" + field + "' must be a number", field);
    }
    chat[mapped->second] = value;
  }
  return ok_status();
}

Status apply_format(const json& body, json& chat) {
  auto format = body.find("format");
  if (format == body.end() || format->is_null() ||
      (format->is_string() && format->get_ref<const std::string&>().empty())) {
    return ok_status();
  }
  if (format->is_string() && *format == "json") {
    chat["response_format"] = {{"type", "json_object"}};
    return ok_status();
  }
  if (format->is_object()) {
    chat["response_format"] = {{"type", "json_schema"},
                               {"json_schema", {{"name", "response"}, {"schema", *format}}}};
    return ok_status();
  }
  return bad_field("'format' must be \"json\" or a JSON schema object", "format");
}

Status apply_think(const json& body, json& chat) {
  auto think = body.find("think");
  if (think == body.end() || think->is_null()) {
    return ok_status();
  }
  if (think->is_boolean()) {
    chat["chat_template_kwargs"] = {{"enable_thinking", think->get<bool>()}};
    return ok_status();
  }
  if (think->is_string() && (*think == "low" || *think == "medium" || *think == "high")) {
    chat["chat_template_kwargs"] = {{"reasoning_effort", *think}};
    return ok_status();
  }
  return bad_field("'think' must be true, false, \"low\", \"medium\" or \"high\"", "think");
}

Result<std::optional<std::chrono::milliseconds>> keep_alive_of(const json& body) {
  auto ka = body.find("keep_alive");
  if (ka == body.end() || ka->is_null()) {
    return std::optional<std::chrono::milliseconds>();
  }
  std::optional<std::chrono::milliseconds> parsed;
  if (ka->is_number()) {
    parsed = parse_keep_alive_seconds(ka->get<double>());
  } else if (ka->is_string()) {
    parsed = parse_keep_alive(ka->get<std::string>());
  }
  if (!parsed) {
    return bad_field(
        "'keep_alive' must be seconds or a duration such as \"5m\" (negative: keep "
        "loaded, 0: unload)",
        "keep_alive");
  }
  return std::optional<std::chrono::milliseconds>(parsed);
}

Result<OllamaRequest> common(const json& body) {
  OllamaRequest out;
  auto model = body.find("model");
  if (model == body.end() || !model->is_string() || model->get_ref<const std::string&>().empty()) {
    return bad_field("'model' is required and must be a string", "model");
  }
  out.client_model = model->get<std::string>();
  out.model = ollama_catalogue_name(out.client_model);
  if (auto stream = body.find("stream"); stream != body.end() && !stream->is_null()) {
    if (!stream->is_boolean()) {
      return bad_field("'stream' must be a boolean", "stream");
    }
    out.stream = stream->get<bool>();
  }
  auto ka = keep_alive_of(body);
  if (!ka.ok()) {
    return std::move(ka).error();
  }
  out.keep_alive = *ka;
  return out;
}

Status chat_fields(const json& body, json& chat) {
  for (Status s : {apply_options(body, chat), apply_format(body, chat), apply_think(body, chat)}) {
    if (!s.ok()) {
      return s;
    }
  }
  chat["stream"] = true;
  chat["stream_options"] = {{"include_usage", true}};
  return ok_status();
}

}  // namespace

std::string ollama_catalogue_name(std::string_view name) {
  constexpr std::string_view kLatest = ":latest";
  if (name.size() > kLatest.size() && name.substr(name.size() - kLatest.size()) == kLatest) {
    name.remove_suffix(kLatest.size());
  }
  return std::string(name);
}

std::string ollama_listed_name(std::string_view name) {
  if (name.find(':') != std::string_view::npos) {
    return std::string(name);
  }
  return std::string(name) + ":latest";
}

Result<std::string> ollama_model_field(const json& body) {
  for (const char* key : {"model", "name"}) {
    auto it = body.find(key);
    if (it != body.end() && it->is_string() && !it->get_ref<const std::string&>().empty()) {
      return ollama_catalogue_name(it->get<std::string>());
    }
  }
  return bad_field("'model' is required and must be a string", "model");
}

Result<OllamaRequest> ollama_chat_request(const json& body) {
  if (auto e = unknown_key(
          body,
          {"model", "messages", "tools", "format", "options", "stream", "keep_alive", "think"}, "",
          kOllamaApi)) {
    return *e;
  }
  auto out = common(body);
  if (!out.ok()) {
    return out;
  }
  auto messages = body.find("messages");
  if (messages != body.end() && !messages->is_null() && !messages->is_array()) {
    return bad_field("'messages' must be an array", "messages");
  }
  if (messages == body.end() || messages->is_null() || messages->empty()) {
    out->load_only = true;
    return out;
  }
  json chat = {{"model", out->model}};
  auto translated = chat_messages(*messages, out->has_images);
  if (!translated.ok()) {
    return std::move(translated).error();
  }
  chat["messages"] = std::move(translated).value();
  if (!absent(body, "tools")) {
    if (!body["tools"].is_array()) {
      return bad_field("'tools' must be an array", "tools");
    }
    if (!body["tools"].empty()) {
      chat["tools"] = body["tools"];
    }
  }
  if (Status s = chat_fields(body, chat); !s.ok()) {
    return std::move(s).error();
  }
  out->openai = std::move(chat);
  return out;
}

Result<OllamaRequest> ollama_generate_request(const json& body) {
  if (auto e = unknown_key(body,
                           {"model", "prompt", "suffix", "images", "format", "options", "system",
                            "template", "context", "stream", "raw", "keep_alive", "think"},
                           "", kOllamaApi)) {
    return *e;
  }
  auto refuse = [&](const char* key, const std::string& why) -> std::optional<Error> {
    auto it = body.find(key);
    if (it == body.end() || it->is_null() ||
        (it->is_string() && it->get_ref<const std::string&>().empty()) ||
        (it->is_array() && it->empty()) || (it->is_boolean() && !it->get<bool>())) {
      return std::nullopt;
    }
    return bad_field(std::string("'") + key + "' is not supported: " + why, key);
  };
  if (auto e = refuse("raw", "the router always applies the model's chat template")) {
    return *e;
  }
  if (auto e = refuse("context",
                      "token contexts from earlier answers are not kept; send the "
                      "conversation with /api/chat")) {
    return *e;
  }
  if (auto e = refuse("suffix", "fill-in-the-middle is not available through this route")) {
    return *e;
  }
  if (auto e = refuse("template", "the model's own chat template is always used")) {
    return *e;
  }
  auto out = common(body);
  if (!out.ok()) {
    return out;
  }
  std::string prompt;
  if (!absent(body, "prompt")) {
    if (!body["prompt"].is_string()) {
      return bad_field("'prompt' must be a string", "prompt");
    }
    prompt = body["prompt"].get<std::string>();
  }
  const bool images =
      !absent(body, "images") && body["images"].is_array() && !body["images"].empty();
  if (prompt.empty() && !images) {
    out->load_only = true;
    return out;
  }
  json messages = json::array();
  if (!absent(body, "system")) {
    if (!body["system"].is_string()) {
      return bad_field("'system' must be a string", "system");
    }
    messages.push_back({{"role", "system"}, {"content", body["system"]}});
  }
  json user = {{"role", "user"}, {"content", prompt}};
  if (!absent(body, "images")) {
    auto parts = with_images(prompt, body["images"], "images");
    if (!parts.ok()) {
      return std::move(parts).error();
    }
    user["content"] = std::move(parts).value();
    out->has_images = images;
  }
  messages.push_back(std::move(user));
  json chat = {{"model", out->model}, {"messages", std::move(messages)}};
  if (Status s = chat_fields(body, chat); !s.ok()) {
    return std::move(s).error();
  }
  out->openai = std::move(chat);
  return out;
}

Result<OllamaRequest> ollama_embed_request(const json& body, bool legacy) {
  // Two calls, not one list chosen by a conditional: an initializer_list's
  // array lives only as long as the expression that creates it.
  const std::optional<Error> unknown =
      legacy
          ? unknown_key(body, {"model", "prompt", "options", "keep_alive"}, "", kOllamaApi)
          : unknown_key(body, {"model", "input", "truncate", "options", "keep_alive", "dimensions"},
                        "", kOllamaApi);
  if (unknown) {
    return *unknown;
  }
  if (!absent(body, "truncate") &&
      !(body["truncate"].is_boolean() && !body["truncate"].get<bool>())) {
    return bad_field(
        "'truncate' is not supported: inputs longer than the model's context are refused, "
        "not cut (send truncate: false, or leave it out)",
        "truncate");
  }
  if (!absent(body, "dimensions")) {
    return bad_field("'dimensions' is not supported: embeddings have the model's own size",
                     "dimensions");
  }
  if (!absent(body, "options")) {
    if (!body["options"].is_object()) {
      return bad_field("'options' must be an object", "options");
    }
    if (!body["options"].empty()) {
      const std::string key = body["options"].begin().key();
      return bad_field("'options." + key + "' is not supported for embeddings", "options." + key);
    }
  }
  auto out = common(body);
  if (!out.ok()) {
    return out;
  }
  out->stream = false;
  const char* field = legacy ? "prompt" : "input";
  auto input = body.find(field);
  const bool strings =
      input != body.end() &&
      (input->is_string() ||
       (input->is_array() && !input->empty() &&
        std::all_of(input->begin(), input->end(), [](const json& s) { return s.is_string(); })));
  if (!strings || (legacy && !input->is_string())) {
    return bad_field(std::string("'") + field + "' is required and must be " +
                         (legacy ? "a string" : "a string or an array of strings"),
                     field);
  }
  out->openai = {{"model", out->model}, {"input", *input}, {"encoding_format", "float"}};
  return out;
}

}  // namespace lemon::api
