#include "lemon/api/ollama/ollama_answer.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "lemon/http/error_response.h"
#include "lemon/http/handler_support.h"

namespace lemon::api {

using inference::tokens_from_chunk;
namespace {

using nlohmann::json;

std::int64_t ns(std::chrono::steady_clock::duration d) {
  return std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

}  // namespace

std::string ollama_timestamp(std::chrono::system_clock::time_point t) {
  const auto since = t.time_since_epoch();
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(since);
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(since - secs).count();
  std::time_t tt = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(nanos));
  return buf;
}

OllamaAnswer::OllamaAnswer(OllamaEndpoint endpoint, std::string model, bool streaming,
                           Clock::time_point started)
    : endpoint_(endpoint), model_(std::move(model)), streaming_(streaming), started_(started) {}

json OllamaAnswer::line(const std::string& content, const std::string& thinking) const {
  json j = {{"model", model_}, {"created_at", ollama_timestamp(std::chrono::system_clock::now())}};
  if (endpoint_ == OllamaEndpoint::kChat) {
    json message = {{"role", "assistant"}, {"content", content}};
    if (!thinking.empty()) {
      message["thinking"] = thinking;
    }
    j["message"] = std::move(message);
  } else {
    j["response"] = content;
    if (!thinking.empty()) {
      j["thinking"] = thinking;
    }
  }
  j["done"] = false;
  return j;
}

std::string OllamaAnswer::chunk(const json& chunk, Clock::time_point now) {
  if (!chunk.is_object()) {
    return "";
  }
  tokens_from_chunk(chunk, prompt_tokens_, completion_tokens_);
  if (auto t = chunk.find("timings"); t != chunk.end() && t->is_object()) {
    if (auto p = t->find("prompt_ms"); p != t->end() && p->is_number()) {
      prompt_ms_ = p->get<double>();
    }
    if (auto p = t->find("predicted_ms"); p != t->end() && p->is_number()) {
      predicted_ms_ = p->get<double>();
    }
  }
  if (auto u = chunk.find("usage"); u != chunk.end() && u->is_object() && !prompt_ms_) {
    if (auto p = u->find("prefill_duration_ttft"); p != u->end() && p->is_number()) {
      prompt_ms_ = p->get<double>() * 1000.0;  // FLM: seconds
    }
  }
  auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array() || choices->empty() ||
      !(*choices)[0].is_object()) {
    return "";
  }
  const json& choice = (*choices)[0];
  if (auto f = choice.find("finish_reason"); f != choice.end() && f->is_string()) {
    finish_reason_ = f->get<std::string>();
  }
  auto delta = choice.find("delta");
  if (delta == choice.end() || !delta->is_object()) {
    return "";
  }
  auto text_of = [&](const char* key) {
    auto it = delta->find(key);
    return it != delta->end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const std::string content = text_of("content");
  const std::string thinking = text_of("reasoning_content");
  if (auto calls = delta->find("tool_calls"); calls != delta->end() && calls->is_array()) {
    for (const auto& call : *calls) {
      if (!call.is_object()) {
        continue;
      }
      const int index = call.value("index", 0);
      auto known = std::find(call_indexes_.begin(), call_indexes_.end(), index);
      if (known == call_indexes_.end()) {
        call_indexes_.push_back(index);
        calls_.push_back({});
        known = call_indexes_.end() - 1;
      }
      Call& c = calls_[static_cast<std::size_t>(known - call_indexes_.begin())];
      if (auto id = call.find("id"); id != call.end() && id->is_string()) {
        c.id = id->get<std::string>();
      }
      if (auto f = call.find("function"); f != call.end() && f->is_object()) {
        if (auto n = f->find("name"); n != f->end() && n->is_string()) {
          c.name += n->get<std::string>();
        }
        if (auto a = f->find("arguments"); a != f->end()) {
          c.arguments += a->is_string() ? a->get<std::string>() : a->is_null() ? "" : a->dump();
        }
      }
    }
    ++deltas_;
  }
  if (content.empty() && thinking.empty()) {
    return "";
  }
  ++deltas_;
  if (!first_chunk_) {
    first_chunk_ = now;
  }
  last_chunk_ = now;
  text_ += content;
  thinking_ += thinking;
  return streaming_ ? json_text(line(content, thinking)) + "\n" : "";
}

Result<json> OllamaAnswer::tool_calls() const {
  json out = json::array();
  for (std::size_t i = 0; i < calls_.size(); ++i) {
    const Call& c = calls_[i];
    json args = c.arguments.empty() ? json::object() : json::parse(c.arguments, nullptr, false);
    if (!args.is_object()) {
      return Error(ErrorCode::kUpstreamProtocol, "the backend's arguments for tool '" + c.name +
                                                     "' are not a JSON object: " + c.arguments);
    }
    json call = {{"function", {{"index", i}, {"name", c.name}, {"arguments", std::move(args)}}}};
    if (!c.id.empty()) {
      call["id"] = c.id;
    }
    out.push_back(std::move(call));
  }
  return out;
}

json OllamaAnswer::final_fields(Clock::time_point now) const {
  const std::int64_t prompt_ns = prompt_ms_ ? static_cast<std::int64_t>(*prompt_ms_ * 1e6) : 0;
  std::int64_t eval_ns = 0;
  if (predicted_ms_) {
    eval_ns = static_cast<std::int64_t>(*predicted_ms_ * 1e6);
  } else if (first_chunk_ && last_chunk_) {
    eval_ns = ns(*last_chunk_ - *first_chunk_);
  }
  const Clock::time_point first = first_chunk_.value_or(now);
  return {{"done", true},
          {"done_reason", finish_reason_ == "length" ? "length" : "stop"},
          {"total_duration", ns(now - started_)},
          {"load_duration", std::max<std::int64_t>(0, ns(first - started_) - prompt_ns)},
          {"prompt_eval_count", prompt_tokens_},
          {"prompt_eval_duration", prompt_ns},
          {"eval_count", completion_tokens_ > 0 ? completion_tokens_ : deltas_},
          {"eval_duration", eval_ns}};
}

std::string OllamaAnswer::close(Clock::time_point now) {
  std::string out;
  if (!calls_.empty()) {
    auto calls = tool_calls();
    if (!calls.ok()) {
      return json_text({{"error", calls.error().message()}}) + "\n";
    }
    json l = line("", "");
    l["message"]["tool_calls"] = std::move(calls).value();
    out += json_text(l) + "\n";
  }
  json last = line("", "");
  last.update(final_fields(now));
  return out + json_text(last) + "\n";
}

Result<json> ollama_embed_answer(const json& backend, const std::string& model, bool legacy,
                                 std::int64_t total_ns) {
  auto data = backend.find("data");
  if (data == backend.end() || !data->is_array() || data->empty()) {
    return Error(ErrorCode::kUpstreamProtocol, "the backend's embeddings answer has no data");
  }
  std::vector<const json*> items;
  for (const auto& item : *data) {
    if (!item.is_object() || !item.contains("embedding") || !item["embedding"].is_array()) {
      return Error(ErrorCode::kUpstreamProtocol,
                   "the backend's embeddings answer has an item without an embedding");
    }
    items.push_back(&item);
  }
  std::stable_sort(items.begin(), items.end(), [](const json* a, const json* b) {
    return a->value("index", 0) < b->value("index", 0);
  });
  if (legacy) {
    return json{{"embedding", (*items.front())["embedding"]}};
  }
  json embeddings = json::array();
  for (const json* item : items) {
    embeddings.push_back((*item)["embedding"]);
  }
  int prompt_tokens = 0;
  int unused = 0;
  tokens_from_chunk(backend, prompt_tokens, unused);
  return json{{"model", model},
              {"embeddings", std::move(embeddings)},
              {"total_duration", total_ns},
              {"prompt_eval_count", prompt_tokens}};
}

Result<json> OllamaAnswer::whole(Clock::time_point now) {
  json out = line(text_, thinking_);
  if (!calls_.empty()) {
    auto calls = tool_calls();
    if (!calls.ok()) {
      return std::move(calls).error();
    }
    out["message"]["tool_calls"] = std::move(calls).value();
  }
  out.update(final_fields(now));
  return out;
}

}  // namespace lemon::api
