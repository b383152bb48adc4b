#include "fake_openai.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fake_reply.h"
#include "fake_request.h"
#include "fake_runtime.h"
#include "fake_slots.h"
#include "fake_util.h"

namespace fake {
namespace {

enum class Kind { kChat, kCompletion };

// Everything needed to build the responses of one request.
struct Gen {
  Kind kind = Kind::kChat;
  StatsStyle stats = StatsStyle::kLlama;
  std::string id;
  std::string model;
  int64_t created = 0;
  int prompt_n = 0;
  int cache_n = 0;  // of prompt_n, reused from the slot's cache
  TokenCount tokens;
  bool include_usage = false;
  double prompt_ms = 0;
  double per_token_ms = 0;
  int draft_n = 0;  // speculative decoding: tokens drafted (0: none)
  int draft_n_accepted = 0;
  std::string reply;  // the reply_text knob: a whole chat answer's text
};

json usage_json(const Gen& g) {
  json u = {{"prompt_tokens", g.prompt_n},
            {"completion_tokens", g.tokens.n},
            {"total_tokens", g.prompt_n + g.tokens.n}};
  if (g.stats == StatsStyle::kFlm) {
    u["prefill_duration_ttft"] = g.prompt_ms / 1000.0;
    u["decoding_speed_tps"] = 1000.0 / g.per_token_ms;
  }
  return u;
}

json timings_json(const Gen& g) {
  // As llama-server: prompt_n counts the tokens evaluated, cache_n those
  // reused from the slot's cache.
  const int evaluated = std::max(1, g.prompt_n - g.cache_n);
  json t = {{"cache_n", g.cache_n},
            {"prompt_n", g.prompt_n - g.cache_n},
            {"prompt_ms", g.prompt_ms},
            {"prompt_per_token_ms", g.prompt_ms / evaluated},
            {"prompt_per_second", 1000.0 * evaluated / std::max(g.prompt_ms, 1e-3)},
            {"predicted_n", g.tokens.n},
            {"predicted_ms", g.per_token_ms * g.tokens.n},
            {"predicted_per_token_ms", g.per_token_ms},
            {"predicted_per_second", 1000.0 / g.per_token_ms}};
  if (g.draft_n > 0) {  // as llama-server: only when it drafted
    t["draft_n"] = g.draft_n;
    t["draft_n_accepted"] = g.draft_n_accepted;
  }
  return t;
}

// Adds the style's statistics to a final response or chunk.
void add_stats(const Gen& g, json& j, bool streaming) {
  if (g.stats == StatsStyle::kLlama) {
    j["timings"] = timings_json(g);
    if (!streaming || g.include_usage) {
      j["usage"] = usage_json(g);
    }
  } else {
    j["usage"] = usage_json(g);
  }
}

const char* finish_reason(const Gen& g) {
  return g.tokens.hit_limit ? "length" : "stop";
}

json envelope(const Gen& g, bool chunk) {
  const char* object = g.kind == Kind::kChat ? (chunk ? "chat.completion.chunk" : "chat.completion")
                                             : "text_completion";
  json j = {{"id", g.id}, {"object", object}, {"created", g.created}, {"model", g.model}};
  if (g.stats == StatsStyle::kLlama) {
    j["system_fingerprint"] = "b6000-fake";
  }
  return j;
}

// llama-server's prompt progress (tools/server/server-task.cpp): an ordinary
// chunk of the route's kind (a chat one with an empty assistant delta) with
// "prompt_progress": {"total","cache","processed","time_ms"}.
std::string progress_chunk(const Gen& g, long processed) {
  json j = envelope(g, true);
  json choice = {{"index", 0}, {"finish_reason", nullptr}};
  if (g.kind == Kind::kChat) {
    choice["delta"] = {{"role", "assistant"}, {"content", nullptr}};
  } else {
    choice["text"] = "";
  }
  j["choices"] = json::array({choice});
  j["prompt_progress"] = {
      {"total", g.prompt_n}, {"cache", g.cache_n}, {"processed", processed}, {"time_ms", 0.0}};
  return sse_data(j);
}

std::string full_response(const Gen& g) {
  json j = envelope(g, false);
  std::string text = g.reply.empty() ? generated_text(g.tokens.n) : g.reply;
  json choice = {{"index", 0}, {"finish_reason", finish_reason(g)}};
  if (g.kind == Kind::kChat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
    choice["logprobs"] = nullptr;
  }
  j["choices"] = json::array({choice});
  add_stats(g, j, false);
  return dump(j);
}

std::string token_chunk(const Gen& g, int index, const std::string& piece) {
  json j = envelope(g, true);
  json choice = {{"index", 0}, {"finish_reason", nullptr}};
  if (g.kind == Kind::kChat) {
    choice["delta"] =
        index == 0 ? json{{"role", "assistant"}, {"content", piece}} : json{{"content", piece}};
  } else {
    choice["text"] = piece;
    choice["logprobs"] = nullptr;
  }
  j["choices"] = json::array({choice});
  j["fake_ts_ns"] = mono_ns();
  return sse_data(j);
}

std::string final_chunk(const Gen& g) {
  json j = envelope(g, true);
  json choice = {{"index", 0}, {"finish_reason", finish_reason(g)}};
  if (g.kind == Kind::kChat) {
    choice["delta"] = json::object();
  } else {
    choice["text"] = "";
    choice["logprobs"] = nullptr;
  }
  j["choices"] = json::array({choice});
  add_stats(g, j, true);
  j["fake_ts_ns"] = mono_ns();
  return sse_data(j);
}

// The tool a chat request forces: tool_choice "required" (the first tool) or
// {"type":"function","function":{"name"}} (that one, if listed); null when
// the request does not force one (the fake then answers with text).
const json* forced_tool(const json& body) {
  auto tools = body.find("tools");
  auto choice = body.find("tool_choice");
  if (tools == body.end() || !tools->is_array() || tools->empty() || choice == body.end()) {
    return nullptr;
  }
  if (choice->is_string() && *choice == "required") {
    return &(*tools)[0];
  }
  if (!choice->is_object() || !choice->contains("function") || !(*choice)["function"].is_object()) {
    return nullptr;
  }
  const json name = (*choice)["function"].value("name", json());
  for (const auto& tool : *tools) {
    if (tool.is_object() && tool.contains("function") && tool["function"].is_object() &&
        tool["function"].value("name", json()) == name) {
      return &tool;
    }
  }
  return nullptr;
}

// The call's arguments: "fake-<name>" for each property of the tool's schema.
std::string tool_arguments(const json& tool) {
  json args = json::object();
  const json params = tool["function"].value("parameters", json::object());
  if (params.is_object() && params.contains("properties") && params["properties"].is_object()) {
    for (const auto& item : params["properties"].items()) {
      args[item.key()] = "fake-" + item.key();
    }
  }
  return dump(args);
}

// The arguments in kToolFragments pieces (the last ones may be empty).
constexpr int kToolFragments = 3;
std::string tool_fragment(const std::string& args, int i) {
  const std::size_t size = (args.size() + kToolFragments - 1) / kToolFragments;
  const std::size_t start = std::min(args.size(), size * static_cast<std::size_t>(i));
  return args.substr(start, size);
}

json tool_call_json(const Gen& g, const json& tool, const std::string& arguments) {
  return {{"index", 0},
          {"id", "call_" + g.id},
          {"type", "function"},
          {"function", {{"name", tool["function"].value("name", "")}, {"arguments", arguments}}}};
}

// Answers a chat that forces a tool with one call to it, as llama-server
// does: the call (its id and name, then its arguments in pieces) and
// finish_reason "tool_calls".
void reply_tool_call(const JobPtr& job, httplib::Response& res, const GenParams& params,
                     const json& body, const std::shared_ptr<Gen>& g, const json& tool) {
  const std::string args = tool_arguments(tool);
  g->tokens.n = kToolFragments;
  g->tokens.hit_limit = false;
  if (!json_true(body, "stream")) {
    json j = envelope(*g, false);
    json message = {{"role", "assistant"},
                    {"content", nullptr},
                    {"tool_calls", json::array({tool_call_json(*g, tool, args)})}};
    j["choices"] =
        json::array({{{"index", 0}, {"finish_reason", "tool_calls"}, {"message", message}}});
    add_stats(*g, j, false);
    reply_later(job, res, params, 0, dump(j));
    return;
  }
  StreamPlan plan;
  plan.tokens = kToolFragments;
  plan.head = [g, tool] {
    json j = envelope(*g, true);
    json delta = {{"role", "assistant"},
                  {"content", nullptr},
                  {"tool_calls", json::array({tool_call_json(*g, tool, "")})}};
    j["choices"] = json::array({{{"index", 0}, {"finish_reason", nullptr}, {"delta", delta}}});
    return std::vector<std::string>{sse_data(j)};
  };
  plan.token_event = [g, args](int i, const std::string&) {
    json j = envelope(*g, true);
    json call = {{"index", 0}, {"function", {{"arguments", tool_fragment(args, i)}}}};
    json delta = {{"tool_calls", json::array({call})}};
    j["choices"] = json::array({{{"index", 0}, {"finish_reason", nullptr}, {"delta", delta}}});
    j["fake_ts_ns"] = mono_ns();
    return sse_data(j);
  };
  plan.tail = [g] {
    json j = envelope(*g, true);
    j["choices"] =
        json::array({{{"index", 0}, {"finish_reason", "tool_calls"}, {"delta", json::object()}}});
    add_stats(*g, j, true);
    return std::vector<std::string>{sse_data(j), "data: [DONE]\n\n"};
  };
  reply_stream(job, res, params, std::move(plan));
}

// What a template following `rules` raises for `messages`, if anything
// (texts of real templates: gpt-oss, Qwen3.5, Mistral).
std::optional<std::string> template_refusal(const std::vector<std::string>& rules,
                                            const json& messages) {
  auto has = [&](const char* rule) {
    return std::find(rules.begin(), rules.end(), rule) != rules.end();
  };
  std::string previous;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    if (!m.is_object()) {
      continue;
    }
    const std::string role = m.value("role", "");
    const bool tool_calls =
        m.contains("tool_calls") && m["tool_calls"].is_array() && !m["tool_calls"].empty();
    const bool content = m.contains("content") && m["content"].is_string() &&
                         !m["content"].get_ref<const std::string&>().empty();
    const bool reasoning = (m.contains("thinking") && m["thinking"].is_string()) ||
                           (m.contains("reasoning_content") && m["reasoning_content"].is_string());
    if (has("reasoning_with_tool_calls") && role == "assistant" && tool_calls && content &&
        reasoning) {
      return "Cannot pass both content and thinking in an assistant message with tool calls! Put "
             "the analysis message in one or the other, but not both.";
    }
    if (has("system_first") && role == "system" && i > 0) {
      return "System message must be at the beginning.";
    }
    if (has("alternate_roles") && (role == "user" || role == "assistant") && role == previous &&
        !tool_calls) {
      return "After the optional system message, conversation roles must alternate "
             "user/assistant/user/assistant/...";
    }
    previous = tool_calls ? std::string("tool_calls") : role;
  }
  return std::nullopt;
}

bool validate(Kind kind, const json& body, std::string* error) {
  if (kind == Kind::kChat) {
    if (!body.contains("messages") || !body["messages"].is_array()) {
      *error = "'messages' is required and must be an array";
      return false;
    }
    return true;
  }
  if (!body.contains("prompt") || !(body["prompt"].is_string() || body["prompt"].is_array())) {
    *error = "\"prompt\" must be provided";
    return false;
  }
  return true;
}

// The prompt as a chat template would render it: what a slot's cache holds.
std::string rendered_prompt(Kind kind, const json& body) {
  if (kind == Kind::kCompletion) {
    return body["prompt"].is_string() ? body["prompt"].get<std::string>() : body["prompt"].dump();
  }
  std::string out;
  for (const auto& m : body["messages"]) {
    if (!m.is_object()) {
      continue;
    }
    const json content = m.value("content", json(""));
    out += "<|" + m.value("role", std::string()) + "|>" +
           (content.is_string() ? content.get<std::string>() : content.dump()) + "\n";
  }
  return out + "<|assistant|>";
}

void handle(Kind kind, const OpenAiOptions& options, const httplib::Request& req,
            httplib::Response& res) {
  JobPtr job = admit(req, res);
  json body;
  if (!job || !parse_json_body(job, req, res, &body)) {
    return;
  }
  remember_request(body);
  std::string error;
  if (!validate(kind, body, &error)) {
    reply_bad_request(job, res, error);
    return;
  }
  if (kind == Kind::kChat) {
    if (auto refusal = template_refusal(runtime().knobs.template_rules, body["messages"])) {
      // llama-server: the template's raise_exception(), as a 400.
      ++runtime().counters.template_rejections;
      reply_now(job, res, 400,
                llama_error_json(400, "Jinja Exception: " + *refusal, "invalid_request_error"));
      return;
    }
  }
  GenParams params = request_params(runtime().knobs, body);
  auto g = std::make_shared<Gen>();
  g->kind = kind;
  g->stats = options.stats;
  g->id = make_id(kind == Kind::kChat ? "chatcmpl-" : "cmpl-");
  g->model = model_name(body, options.model_id);
  if (kind == Kind::kChat) {
    g->reply = runtime().knobs.reply_text;
  }
  g->created = unix_seconds();
  g->prompt_n = prompt_tokens(req);
  g->tokens = count_tokens(params, body, {"max_tokens", "max_completion_tokens", "n_predict"});
  if (options.speculative && g->tokens.n > 0) {
    g->draft_n = g->tokens.n;
    g->draft_n_accepted = static_cast<int>(g->tokens.n * runtime().knobs.draft_acceptance);
  }
  SlotRequest slot_request;
  slot_request.prompt_text = rendered_prompt(kind, body);
  if (body.contains("id_slot") && body["id_slot"].is_number_integer()) {
    slot_request.id_slot = body["id_slot"].get<int>();
  }
  if (body.contains("cache_prompt") && body["cache_prompt"].is_boolean()) {
    slot_request.cache_prompt = body["cache_prompt"].get<bool>();
  }
  SlotGrant grant = take_slot(job, g->prompt_n, g->tokens.n, slot_request);
  if (grant.refusal) {
    reply_now(job, res, grant.refusal->status, grant.refusal->body);
    return;
  }
  g->cache_n = grant.cache_n;
  // The slot keeps the prompt and the reply, as the next turn will send them.
  cache_in_slot(grant.slot, slot_request.prompt_text + generated_text(g->tokens.n) + "\n");
  if (params.prompt_us_per_token > 0) {
    const int prompt_delay_ms = static_cast<int>(static_cast<long>(g->prompt_n - g->cache_n) *
                                                 params.prompt_us_per_token / 1000);
    params.response_delay_ms += prompt_delay_ms;
    g->prompt_ms = params.response_delay_ms;
  } else {
    g->prompt_ms =
        params.response_delay_ms > 0 ? params.response_delay_ms : (g->prompt_n - g->cache_n) * 0.25;
  }
  g->per_token_ms = params.stream_chunk_delay_ms > 0 ? params.stream_chunk_delay_ms : 10.0;
  g->include_usage =
      body.contains("stream_options") && json_true(body["stream_options"], "include_usage");

  if (const json* tool = kind == Kind::kChat ? forced_tool(body) : nullptr) {
    reply_tool_call(job, res, params, body, g, *tool);
    return;
  }
  if (!json_true(body, "stream")) {
    int gen_ms = params.stream_chunk_delay_ms > 0 ? params.stream_chunk_delay_ms * g->tokens.n : 0;
    reply_later(job, res, params, gen_ms, full_response(*g));
    return;
  }
  StreamPlan plan;
  plan.tokens = g->tokens.n;
  plan.token_event = [g](int i, const std::string& piece) { return token_chunk(*g, i, piece); };
  plan.tail = [g] { return std::vector<std::string>{final_chunk(*g), "data: [DONE]\n\n"}; };
  if (options.stats == StatsStyle::kLlama && json_true(body, "return_progress") &&
      !runtime().knobs.ignore_return_progress) {
    plan.prompt_tokens = g->prompt_n;
    plan.cached_tokens = g->cache_n;
    plan.progress_event = [g](long processed) { return progress_chunk(*g, processed); };
  }
  reply_stream(job, res, params, std::move(plan));
}

}  // namespace

httplib::Server::Handler chat_completions_handler(const OpenAiOptions& options) {
  return [options](const httplib::Request& req, httplib::Response& res) {
    handle(Kind::kChat, options, req, res);
  };
}

httplib::Server::Handler completions_handler(const OpenAiOptions& options) {
  return [options](const httplib::Request& req, httplib::Response& res) {
    handle(Kind::kCompletion, options, req, res);
  };
}

httplib::Server::Handler apply_template_handler() {
  return [](const httplib::Request& req, httplib::Response& res) {
    ++runtime().counters.template_applications;
    json body = json::parse(req.body, nullptr, false);
    std::string error;
    if (!body.is_object() || !body.contains("messages") || !body["messages"].is_array()) {
      res.status = 400;
      res.set_content(llama_error_json(400, "'messages' is required", "invalid_request_error"),
                      "application/json");
      return;
    }
    res.set_content(dump(json{{"prompt", rendered_prompt(Kind::kChat, body)}}), "application/json");
  };
}

httplib::Server::Handler tokenize_handler() {
  return [](const httplib::Request& req, httplib::Response& res) {
    ++runtime().counters.tokenizations;
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || !body.contains("content") || !body["content"].is_string()) {
      res.status = 400;
      res.set_content(
          llama_error_json(400, "\"content\" must be provided", "invalid_request_error"),
          "application/json");
      return;
    }
    // One token per whitespace-separated word, after a BOS with add_special.
    json tokens = json::array();
    if (json_true(body, "add_special")) {
      tokens.push_back(1);
    }
    const std::string& text = body["content"].get_ref<const std::string&>();
    bool in_word = false;
    for (char c : text) {
      const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
      if (!space && !in_word) {
        tokens.push_back(100 + static_cast<int>(tokens.size()));
      }
      in_word = !space;
    }
    res.set_content(dump(json{{"tokens", tokens}}), "application/json");
  };
}

httplib::Server::Handler models_handler(const OpenAiOptions& options,
                                        const std::string& meta_json) {
  return [options, meta_json](const httplib::Request&, httplib::Response& res) {
    json model = {{"id", options.model_id},
                  {"object", "model"},
                  {"created", unix_seconds()},
                  {"owned_by", options.owned_by}};
    if (!meta_json.empty()) {
      model["meta"] = json::parse(meta_json, nullptr, false);
    }
    json list = {{"object", "list"}, {"data", json::array({model})}};
    res.set_content(dump(list), "application/json");
  };
}

}  // namespace fake
