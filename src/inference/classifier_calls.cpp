#include "lemon/inference/classifier_calls.h"

#include <chrono>

#include "lemon/core/text.h"
#include "lemon/inference/inference_gateway.h"
#include "lemon/routing/classifier_protocol.h"

namespace lemon::inference {
namespace {

using Clock = std::chrono::steady_clock;
using routing::ClassifierResult;

ClassifierResult failed(std::string why) {
  ClassifierResult r;
  r.error = std::move(why);
  return r;
}

}  // namespace

std::map<std::string, std::vector<float>> PhraseEmbeddings::find(
    const std::string& model, const std::vector<std::string>& phrases,
    std::vector<std::string>& missing) const {
  std::map<std::string, std::vector<float>> out;
  MutexLock lock(mu_);
  for (const auto& p : phrases) {
    auto it = vectors_.find({model, p});
    if (it == vectors_.end()) {
      missing.push_back(p);
    } else {
      out[p] = it->second;
    }
  }
  return out;
}

void PhraseEmbeddings::keep(const std::string& model, const std::string& phrase,
                            std::vector<float> vector) {
  MutexLock lock(mu_);
  if (vectors_.size() >= kMaxVectors) {
    vectors_.clear();
  }
  vectors_[{model, phrase}] = std::move(vector);
}

std::size_t PhraseEmbeddings::size() const {
  MutexLock lock(mu_);
  return vectors_.size();
}

ClassifierCalls::ClassifierCalls(InferenceGateway& gateway, PhraseEmbeddings& phrases,
                                 std::function<bool()> gone)
    : gateway_(gateway), phrases_(phrases), gone_(std::move(gone)) {}

ClassifierResult ClassifierCalls::semantic(const routing::Classifier& c,
                                           const routing::RouteInput& input,
                                           Clock::time_point deadline) {
  std::vector<std::string> all;
  for (const auto& [concept_name, phrases] : c.reference_phrases) {
    all.insert(all.end(), phrases.begin(), phrases.end());
  }
  std::vector<std::string> missing;
  auto known = phrases_.find(c.model, all, missing);
  if (!missing.empty()) {
    // The phrases in a call of their own, so they are kept even when the
    // request's text fails.
    auto answer =
        gateway_.call_model(c.model, ApiRoute::kEmbeddings, {{"input", missing}}, deadline, gone_);
    if (!answer.ok()) {
      return failed(answer.error().message());
    }
    auto vectors = routing::embedding_vectors(*answer);
    if (!vectors || vectors->size() != missing.size()) {
      return failed("the embeddings answer does not hold one vector per reference phrase");
    }
    for (std::size_t i = 0; i < missing.size(); ++i) {
      known[missing[i]] = (*vectors)[i];
      phrases_.keep(c.model, missing[i], std::move((*vectors)[i]));
    }
  }
  // An embedding model takes one batch of tokens at a time: the text's
  // start stands for it.
  const std::string text(utf8_prefix(input.text, kMaxEmbeddedTextBytes));
  auto answer =
      gateway_.call_model(c.model, ApiRoute::kEmbeddings, {{"input", text}}, deadline, gone_);
  if (!answer.ok()) {
    return failed(answer.error().message());
  }
  auto vectors = routing::embedding_vectors(*answer);
  if (!vectors || vectors->size() != 1) {
    return failed("the embeddings answer does not hold one vector for the text");
  }
  auto scores = routing::semantic_scores(c, vectors->front(), known);
  if (!scores) {
    return failed("the vectors differ in length or one is zero");
  }
  ClassifierResult r;
  r.ok = true;
  r.scores = std::move(*scores);
  return r;
}

ClassifierResult ClassifierCalls::classify(const routing::Classifier& c,
                                           const routing::RouteInput& input) {
  const auto started = Clock::now();
  const auto deadline = started + c.timeout;
  ClassifierResult result;
  switch (c.type) {
    case routing::ClassifierType::kSemanticSimilarity:
      result = semantic(c, input, deadline);
      break;
    case routing::ClassifierType::kLlm:
    case routing::ClassifierType::kClassifier: {
      const bool llm = c.type == routing::ClassifierType::kLlm;
      auto answer = gateway_.call_model(
          c.model, ApiRoute::kChatCompletions,
          llm ? routing::llm_label_request(c, input) : routing::label_scores_request(c, input),
          deadline, gone_);
      if (!answer.ok()) {
        result = failed(answer.error().message());
      } else if (!llm) {
        result = routing::read_label_scores(*answer);
      } else if (auto text = routing::chat_text(*answer)) {
        result = routing::read_llm_label_reply(c, *text);
      } else {
        result = failed("the chat answer has no text");
      }
      break;
    }
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return result;
}

}  // namespace lemon::inference
