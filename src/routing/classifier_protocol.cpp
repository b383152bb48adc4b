#include "lemon/routing/classifier_protocol.h"

#include <cmath>

namespace lemon::routing {
namespace {

using nlohmann::json;

std::string trim(std::string_view s) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && blank(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && blank(s.back())) {
    s.remove_suffix(1);
  }
  return std::string(s);
}

std::string joined(const std::vector<std::string>& labels) {
  std::string out;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    out += (i == 0 ? "" : ", ") + labels[i];
  }
  return out;
}

// The request as the classifier model sees it (keys in sorted order).
std::string request_view(const RouteInput& input) {
  json metadata = json::object();
  for (const auto& [key, value] : input.metadata) {
    metadata[key] = value;
  }
  return json{{"text", input.text},
              {"has_tools", input.has_tools},
              {"has_images", input.has_images},
              {"chars", input.chars()},
              {"metadata", std::move(metadata)}}
      .dump();
}

json chat_body(const Classifier& c, std::string system, std::string user) {
  return {{"messages", json::array({{{"role", "system"}, {"content", std::move(system)}},
                                    {{"role", "user"}, {"content", std::move(user)}}})},
          {"stream", false},
          {"temperature", 0.0},
          {"max_tokens", c.max_tokens},
          {"response_format", {{"type", "json_object"}}},
          {"chat_template_kwargs", {{"enable_thinking", false}}}};
}

// The reply as JSON: the whole trimmed text, or what one ``` fence that
// ends the reply encloses; null otherwise.
json parse_reply_object(const std::string& reply) {
  std::string text = trim(reply);
  if (text.rfind("```", 0) == 0) {
    const auto newline = text.find('\n');
    const auto close = text.rfind("```");
    if (newline == std::string::npos || close <= newline || !trim(text.substr(close + 3)).empty()) {
      return nullptr;
    }
    text = trim(text.substr(newline + 1, close - newline - 1));
  }
  json parsed = json::parse(text, nullptr, false);
  return parsed.is_discarded() ? json(nullptr) : parsed;
}

std::map<std::string, double> scores_of_object(const json& o) {
  std::map<std::string, double> out;
  for (const auto& item : o.items()) {
    if (item.value().is_number()) {
      out[item.key()] = item.value().get<double>();
    }
  }
  return out;
}

std::map<std::string, double> scores_of_array(const json& a) {
  std::map<std::string, double> out;
  for (const auto& item : a) {
    if (item.is_object() && item.contains("label") && item["label"].is_string() &&
        item.contains("score") && item["score"].is_number()) {
      out[item["label"].get<std::string>()] = item["score"].get<double>();
    }
  }
  return out;
}

std::map<std::string, double> scores_of(const json& payload) {
  if (payload.is_array()) {
    return scores_of_array(payload);
  }
  if (!payload.is_object()) {
    return {};
  }
  for (const char* key : {"labels", "scores", "classification", "classifications"}) {
    auto it = payload.find(key);
    if (it == payload.end()) {
      continue;
    }
    auto scores = it->is_object()  ? scores_of_object(*it)
                  : it->is_array() ? scores_of_array(*it)
                                   : std::map<std::string, double>{};
    if (!scores.empty()) {
      return scores;
    }
  }
  if (payload.contains("label") && payload["label"].is_string() && payload.contains("score") &&
      payload["score"].is_number()) {
    return {{payload["label"].get<std::string>(), payload["score"].get<double>()}};
  }
  if (auto data = payload.find("data"); data != payload.end() && data->is_array()) {
    auto scores = scores_of_array(*data);
    if (!scores.empty()) {
      return scores;
    }
  }
  return scores_of_object(payload);
}

double norm(const std::vector<float>& v) {
  double sum = 0.0;
  for (float x : v) {
    sum += static_cast<double>(x) * x;
  }
  return std::sqrt(sum);
}

}  // namespace

json llm_label_request(const Classifier& c, const RouteInput& input) {
  std::string system = c.prompt;
  system +=
      "\n\nThe user message describes the request to route as JSON: \"text\" is its latest user "
      "turn, \"chars\" that text's length in bytes, \"has_tools\" and \"has_images\" whether it "
      "carries tools or images, and \"metadata\" the caller's hints. Choose exactly one of: " +
      joined(c.labels) +
      ". Answer with a JSON object and nothing else: {\"model\": \"<the name you chose>\", "
      "\"rationale\": \"<one short sentence>\"}.";
  return chat_body(c, std::move(system), request_view(input));
}

ClassifierResult read_llm_label_reply(const Classifier& c, const std::string& content) {
  ClassifierResult result;
  result.ok = true;  // a reply that breaks the contract fails open, it is not an error
  const json reply = parse_reply_object(content);
  if (!reply.is_object() || reply.size() != 2 || !reply.contains("model") ||
      !reply["model"].is_string() || !reply.contains("rationale") ||
      !reply["rationale"].is_string()) {
    return result;
  }
  const std::string rationale = trim(reply["rationale"].get<std::string>());
  const std::string chosen = reply["model"].get<std::string>();
  if (rationale.empty()) {
    return result;
  }
  for (const auto& label : c.labels) {
    if (label == chosen) {
      result.scores[label] = 1.0;
      result.rationale = rationale;
      break;
    }
  }
  return result;
}

json label_scores_request(const Classifier& c, const RouteInput& input) {
  std::string system =
      "Score how well the user's input fits each label, from 0 (not at all) to 1 (certainly).";
  if (!c.labels.empty()) {
    system += " The labels: " + joined(c.labels) + ".";
  }
  system +=
      " Answer with a JSON object that maps each label to its score, and nothing else, for "
      "example {\"label\": 0.8}.";
  return chat_body(c, std::move(system), input.text);
}

ClassifierResult read_label_scores(const json& answer) {
  ClassifierResult result;
  if (answer.is_object() && answer.contains("error")) {
    result.error = "the model answered an error";
    return result;
  }
  std::map<std::string, double> scores;
  if (auto text = chat_text(answer)) {
    scores = scores_of(parse_reply_object(*text));
  } else {
    scores = scores_of(answer);
  }
  if (scores.empty()) {
    result.error = "the answer holds no label scores";
    return result;
  }
  for (const auto& [label, score] : scores) {
    if (!std::isfinite(score) || score < 0.0 || score > 1.0) {
      result.error = "the score of label '" + label + "' is outside [0, 1]";
      return result;
    }
  }
  result.ok = true;
  result.scores = std::move(scores);
  return result;
}

std::optional<std::string> chat_text(const json& answer) {
  if (!answer.is_object()) {
    return std::nullopt;
  }
  if (auto choices = answer.find("choices");
      choices != answer.end() && choices->is_array() && !choices->empty()) {
    const json& choice = choices->front();
    if (choice.is_object()) {
      if (auto m = choice.find("message"); m != choice.end() && m->is_object()) {
        if (auto content = m->find("content"); content != m->end() && content->is_string()) {
          return content->get<std::string>();
        }
      }
      if (auto text = choice.find("text"); text != choice.end() && text->is_string()) {
        return text->get<std::string>();
      }
    }
  }
  if (auto content = answer.find("content"); content != answer.end() && content->is_string()) {
    return content->get<std::string>();
  }
  return std::nullopt;
}

std::optional<std::vector<std::vector<float>>> embedding_vectors(const json& answer) {
  auto data = answer.is_object() ? answer.find("data") : answer.end();
  if (!answer.is_object() || data == answer.end() || !data->is_array() || data->empty()) {
    return std::nullopt;
  }
  std::vector<std::vector<float>> out(data->size());
  for (std::size_t n = 0; n < data->size(); ++n) {
    const json& item = (*data)[n];
    if (!item.is_object() || !item.contains("embedding") || !item["embedding"].is_array() ||
        item["embedding"].empty()) {
      return std::nullopt;
    }
    std::size_t index = n;
    if (auto i = item.find("index");
        i != item.end() && i->is_number_unsigned() && i->get<std::size_t>() < out.size()) {
      index = i->get<std::size_t>();
    }
    std::vector<float> v;
    v.reserve(item["embedding"].size());
    for (const auto& x : item["embedding"]) {
      if (!x.is_number()) {
        return std::nullopt;
      }
      v.push_back(x.get<float>());
    }
    out[index] = std::move(v);
  }
  for (const auto& v : out) {
    if (v.empty()) {
      return std::nullopt;
    }
  }
  return out;
}

std::optional<std::map<std::string, double>> semantic_scores(
    const Classifier& c, const std::vector<float>& text,
    const std::map<std::string, std::vector<float>>& phrase_vectors) {
  const double text_norm = norm(text);
  if (text.empty() || text_norm == 0.0) {
    return std::nullopt;
  }
  std::map<std::string, double> out;
  for (const auto& [concept_name, phrases] : c.reference_phrases) {
    double best = 0.0;
    for (const auto& phrase : phrases) {
      auto it = phrase_vectors.find(phrase);
      if (it == phrase_vectors.end() || it->second.size() != text.size()) {
        return std::nullopt;
      }
      const double phrase_norm = norm(it->second);
      if (phrase_norm == 0.0) {
        return std::nullopt;
      }
      double dot = 0.0;
      for (std::size_t i = 0; i < text.size(); ++i) {
        dot += static_cast<double>(text[i]) * it->second[i];
      }
      best = std::max(best, std::min(1.0, dot / (text_norm * phrase_norm)));
    }
    out[concept_name] = best;
  }
  return out;
}

}  // namespace lemon::routing
