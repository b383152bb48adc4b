#include "lemon/backends/wrapped_server.h"

#include <algorithm>

#include "lemon/core/enum_names.h"

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

namespace {

constexpr auto kApiRouteNames =
    std::to_array<EnumName<ApiRoute>>({{ApiRoute::kChatCompletions, "chat/completions"},
                                       {ApiRoute::kCompletions, "completions"},
                                       {ApiRoute::kResponses, "responses"},
                                       {ApiRoute::kEmbeddings, "embeddings"},
                                       {ApiRoute::kReranking, "reranking"},
                                       {ApiRoute::kTranscriptions, "audio/transcriptions"},
                                       {ApiRoute::kImageGenerations, "images/generations"},
                                       {ApiRoute::kImageEdits, "images/edits"},
                                       {ApiRoute::kImageVariations, "images/variations"},
                                       {ApiRoute::kTokenize, "tokenize"}});

}  // namespace

const char* api_route_name(ApiRoute route) {
  return name_of(kApiRouteNames, route, "");
}

std::optional<std::string> openai_path(ApiRoute route, std::initializer_list<ApiRoute> served) {
  if (std::find(served.begin(), served.end(), route) == served.end()) {
    return std::nullopt;
  }
  return std::string("/v1/") + api_route_name(route);
}

}  // namespace lemon
