// ClassifierCalls: a routing policy's classifiers, run through the router's
// own models (routing/classifier_protocol.h says what is asked and how the
// answer is read). Each call takes a lease like any request (its model is
// loaded if it must be), and the whole call, load included, gets the
// classifier's `timeout`: one that does not answer in time, or fails,
// counts as its on_error.
//
// - semantic_similarity: one embeddings call with the reference phrases
//   not embedded yet (each phrase's vector is kept, PhraseEmbeddings, per
//   model, for every later request), then one with the request's text, its
//   first kMaxEmbeddedTextBytes (an embedding model takes one batch of
//   tokens, 512 by default in llama-server).
// - llm: one chat with the label contract and the classifier's max_tokens.
// - classifier: one chat asking for each label's score (no encoder
//   backend here: see classifier_protocol.h).
//
// Ownership: a ClassifierCalls is one request's (it holds the client's
// "gone" test); PhraseEmbeddings is shared and outlives them.
// Thread-safety: PhraseEmbeddings may be used from any thread.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lemon/core/mutex.h"
#include "lemon/routing/route_engine.h"

namespace lemon::inference {

class InferenceGateway;

// How much of a request's text a semantic_similarity classifier embeds.
inline constexpr std::size_t kMaxEmbeddedTextBytes = 1536;

class PhraseEmbeddings {
 public:
  // At most this many vectors are kept; beyond it the store starts afresh.
  static constexpr std::size_t kMaxVectors = 4096;

  // The vectors known for `phrases` of `model`; the rest go in `missing`.
  std::map<std::string, std::vector<float>> find(const std::string& model,
                                                 const std::vector<std::string>& phrases,
                                                 std::vector<std::string>& missing) const
      LEMON_EXCLUDES(mu_);
  void keep(const std::string& model, const std::string& phrase, std::vector<float> vector)
      LEMON_EXCLUDES(mu_);
  std::size_t size() const LEMON_EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::map<std::pair<std::string, std::string>, std::vector<float>> vectors_ LEMON_GUARDED_BY(mu_);
};

class ClassifierCalls final : public routing::ClassifierSource {
 public:
  // `gone`: the client left (the calls stop).
  ClassifierCalls(InferenceGateway& gateway, PhraseEmbeddings& phrases, std::function<bool()> gone);

  routing::ClassifierResult classify(const routing::Classifier& classifier,
                                     const routing::RouteInput& input) override;

 private:
  routing::ClassifierResult semantic(const routing::Classifier& c, const routing::RouteInput& input,
                                     std::chrono::steady_clock::time_point deadline);

  InferenceGateway& gateway_;
  PhraseEmbeddings& phrases_;
  std::function<bool()> gone_;
};

}  // namespace lemon::inference
