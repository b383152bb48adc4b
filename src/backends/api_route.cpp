#include "lemon/backends/wrapped_server.h"

namespace lemon {

ModelType model_type_for_route(ApiRoute route) {
  switch (route) {
    case ApiRoute::kEmbeddings:
      return ModelType::kEmbedding;
    case ApiRoute::kReranking:
      return ModelType::kReranking;
    case ApiRoute::kTranscriptions:
      return ModelType::kAudio;
    case ApiRoute::kImageGenerations:
    case ApiRoute::kImageEdits:
    case ApiRoute::kImageVariations:
      return ModelType::kImage;
    case ApiRoute::kChatCompletions:
    case ApiRoute::kCompletions:
    case ApiRoute::kResponses:
    case ApiRoute::kTokenize:
      return ModelType::kLlm;
  }
  return ModelType::kLlm;
}

const char* api_route_name(ApiRoute route) {
  switch (route) {
    case ApiRoute::kChatCompletions:
      return "chat/completions";
    case ApiRoute::kCompletions:
      return "completions";
    case ApiRoute::kResponses:
      return "responses";
    case ApiRoute::kEmbeddings:
      return "embeddings";
    case ApiRoute::kReranking:
      return "reranking";
    case ApiRoute::kTranscriptions:
      return "audio/transcriptions";
    case ApiRoute::kImageGenerations:
      return "images/generations";
    case ApiRoute::kImageEdits:
      return "images/edits";
    case ApiRoute::kImageVariations:
      return "images/variations";
    case ApiRoute::kTokenize:
      return "tokenize";
  }
  return "";
}

}  // namespace lemon
