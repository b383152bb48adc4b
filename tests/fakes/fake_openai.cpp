#include "fake_openai.h"

#include <memory>

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
  TokenCount tokens;
  bool include_usage = false;
  double prompt_ms = 0;
  double per_token_ms = 0;
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
  return {{"prompt_n", g.prompt_n},
          {"prompt_ms", g.prompt_ms},
          {"prompt_per_token_ms", g.prompt_ms / g.prompt_n},
          {"prompt_per_second", 1000.0 * g.prompt_n / g.prompt_ms},
          {"predicted_n", g.tokens.n},
          {"predicted_ms", g.per_token_ms * g.tokens.n},
          {"predicted_per_token_ms", g.per_token_ms},
          {"predicted_per_second", 1000.0 / g.per_token_ms}};
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

std::string full_response(const Gen& g) {
  json j = envelope(g, false);
  std::string text = generated_text(g.tokens.n);
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

void handle(Kind kind, const OpenAiOptions& options, const httplib::Request& req,
            httplib::Response& res) {
  JobPtr job = admit(res);
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
  GenParams params = request_params(runtime().knobs, body);
  auto g = std::make_shared<Gen>();
  g->kind = kind;
  g->stats = options.stats;
  g->id = make_id(kind == Kind::kChat ? "chatcmpl-" : "cmpl-");
  g->model = model_name(body, options.model_id);
  g->created = unix_seconds();
  g->prompt_n = prompt_tokens(req);
  g->tokens = count_tokens(params, body, {"max_tokens", "max_completion_tokens", "n_predict"});
  if (auto refused = take_slot(job, g->prompt_n, g->tokens.n)) {
    reply_now(job, res, refused->status, refused->body);
    return;
  }
  g->prompt_ms = params.response_delay_ms > 0 ? params.response_delay_ms : g->prompt_n * 0.25;
  g->per_token_ms = params.stream_chunk_delay_ms > 0 ? params.stream_chunk_delay_ms : 10.0;
  g->include_usage =
      body.contains("stream_options") && json_true(body["stream_options"], "include_usage");

  if (!json_true(body, "stream")) {
    int gen_ms = params.stream_chunk_delay_ms > 0 ? params.stream_chunk_delay_ms * g->tokens.n : 0;
    reply_later(job, res, params, gen_ms, full_response(*g));
    return;
  }
  StreamPlan plan;
  plan.tokens = g->tokens.n;
  plan.token_event = [g](int i, const std::string& piece) { return token_chunk(*g, i, piece); };
  plan.tail = [g] { return std::vector<std::string>{final_chunk(*g), "data: [DONE]\n\n"}; };
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
