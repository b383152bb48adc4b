// How a classifier asks its model and reads the answer (pure; the calls
// themselves are inference's ClassifierCalls):
//
// - semantic_similarity: the request's text and the reference phrases are
//   embedded (POST embeddings); a concept scores the highest cosine
//   similarity of the text to its phrases, clamped to [0, 1].
// - llm: a chat (non-streaming, temperature 0, no thinking, a JSON object
//   answer, `max_tokens` from the classifier) whose system message is the
//   author's prompt and our contract: answer {"model": one of the labels,
//   "rationale": a short sentence}; the user message is the request as
//   JSON {"chars","has_images","has_tools","metadata","text"}. A reply that
//   is exactly such an object (an enclosing ``` fence allowed) scores its
//   label 1.0; anything else answers with no scores (the bands fail open),
//   which is not a failure of the classifier.
// - classifier: we have no encoder backend (Lemonade runs these on
//   onnxruntime), so the model is asked through chat, as Lemonade does for a
//   chat model: score each label in [0, 1] as a JSON object. The scores are
//   read from the chat's content (or the body): an object of label -> score,
//   an array of {label, score}, either under "labels", "scores",
//   "classification" or "classifications", or one {label, score}. No scores,
//   or one outside [0, 1], is a failure (on_error).
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/routing/route_engine.h"

namespace lemon::routing {

// The chat body for an llm classifier (without "model").
nlohmann::json llm_label_request(const Classifier& classifier, const RouteInput& input);
// An llm classifier's reply content, read as the contract says (ok, with
// the label's score 1.0 and the rationale, or ok with no scores).
ClassifierResult read_llm_label_reply(const Classifier& classifier, const std::string& content);

// The chat body for a `classifier` classifier (without "model").
nlohmann::json label_scores_request(const Classifier& classifier, const RouteInput& input);
// Its answer (a chat completion body): the scores, or a failure.
ClassifierResult read_label_scores(const nlohmann::json& answer);

// A chat completion's text: choices[0].message.content (or .text), or a
// top-level "content"; nullopt when there is none.
std::optional<std::string> chat_text(const nlohmann::json& answer);

// The vectors of an embeddings answer, in input order; nullopt when it has
// none, a vector is empty or holds something other than numbers.
std::optional<std::vector<std::vector<float>>> embedding_vectors(const nlohmann::json& answer);

// Each concept's score: the highest cosine similarity between `text` and
// one of its phrases' vectors, clamped to [0, 1]. nullopt when a vector's
// length differs from the text's or a norm is zero.
std::optional<std::map<std::string, double>> semantic_scores(
    const Classifier& classifier, const std::vector<float>& text,
    const std::map<std::string, std::vector<float>>& phrase_vectors);

}  // namespace lemon::routing
