// Embeddings (POST /v1/embeddings) and reranking (POST /v1/rerank) in
// llama-server's OpenAI-compatible shapes, with deterministic results:
// 8-dimensional L2-normalised vectors hashed from the input text, and
// relevance scores from query/document word overlap.
#pragma once

#include <string>

#include <httplib.h>

namespace fake {

constexpr int kEmbeddingDim = 8;

// `enabled` false answers 501 not_supported_error (server started without the flag).
httplib::Server::Handler embeddings_handler(const std::string& model_id, bool enabled);
httplib::Server::Handler rerank_handler(const std::string& model_id, bool enabled);

}  // namespace fake
