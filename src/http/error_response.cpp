#include "lemon/http/error_response.h"

#include "lemon/net/server.h"

namespace lemon::http {

ErrorShape error_shape(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidRequest:
    case ErrorCode::kInvalidOption:
      return {400, "invalid_request_error", "invalid_request_error"};
    case ErrorCode::kInvalidUserArgs:
      return {400, "invalid_request_error", "invalid_llamacpp_args"};
    case ErrorCode::kUnsupportedOperation:
      return {400, "invalid_request_error", "unsupported_operation"};
    case ErrorCode::kUnauthorized:
      return {401, "authentication_error", "invalid_api_key"};
    case ErrorCode::kForbidden:
      return {403, "permission_error", "forbidden"};
    case ErrorCode::kModelNotFound:
      return {404, "invalid_request_error", "model_not_found"};
    case ErrorCode::kModelNotLoaded:
      return {404, "invalid_request_error", "model_not_loaded"};
    case ErrorCode::kRouteNotFound:
      return {404, "invalid_request_error", "not_found"};
    case ErrorCode::kMethodNotAllowed:
      return {405, "invalid_request_error", "method_not_allowed"};
    case ErrorCode::kPayloadTooLarge:
      return {413, "invalid_request_error", "payload_too_large"};
    case ErrorCode::kUnsupportedMediaType:
      return {415, "invalid_request_error", "unsupported_media_type"};
    case ErrorCode::kModelFilesMissing:
      return {404, "invalid_request_error", "model_not_downloaded"};
    case ErrorCode::kUnknownRecipe:
    case ErrorCode::kBackendBinaryMissing:
    case ErrorCode::kBackendExited:
    case ErrorCode::kBackendStartTimeout:
    case ErrorCode::kSpawnFailed:
      return {500, "server_error", "model_load_error"};
    case ErrorCode::kBackendUnavailable:
    case ErrorCode::kBackendCrashed:
    case ErrorCode::kShuttingDown:
      return {503, "server_error", "backend_unavailable"};
    case ErrorCode::kQueueFull:
      return {503, "server_error", "queue_full"};
    case ErrorCode::kUpstreamProtocol:
      return {502, "server_error", "bad_gateway"};
    case ErrorCode::kGatewayTimeout:
      return {504, "server_error", "gateway_timeout"};
    case ErrorCode::kCancelled:
      return {499, "invalid_request_error", "client_closed_request"};
    case ErrorCode::kConflict:
      return {409, "invalid_request_error", "conflict"};
    case ErrorCode::kRemoteNotFound:
      return {404, "invalid_request_error", "remote_not_found"};
    case ErrorCode::kRemoteUnauthorized:
      return {401, "authentication_error", "remote_unauthorized"};
    case ErrorCode::kRemoteForbidden:
      return {403, "permission_error", "remote_forbidden"};
    case ErrorCode::kNetworkError:
      return {502, "server_error", "network_error"};
    case ErrorCode::kChecksumMismatch:
      return {502, "server_error", "checksum_mismatch"};
    case ErrorCode::kInsufficientStorage:
      return {507, "server_error", "insufficient_storage"};
    case ErrorCode::kInsufficientMemory:
      return {507, "server_error", "insufficient_memory"};
    case ErrorCode::kOutOfMemory:
      return {507, "server_error", "out_of_memory"};
    case ErrorCode::kSessionNotFound:
      return {404, "invalid_request_error", "session_not_found"};
    case ErrorCode::kSessionBusy:
      return {409, "invalid_request_error", "session_busy"};
    case ErrorCode::kPromptTooLong:
      return {400, "invalid_request_error", "prompt_too_long"};
    case ErrorCode::kSessionLost:
      return {409, "invalid_request_error", "session_lost"};
    case ErrorCode::kOffline:
      return {404, "invalid_request_error", "offline"};
    case ErrorCode::kInvalidArchive:
      return {502, "server_error", "invalid_archive"};
    case ErrorCode::kInternal:
      return {500, "server_error", "internal_error"};
  }
  return {500, "server_error", "internal_error"};
}

int error_status(const Error& error) {
  if (auto upstream = error.upstream_status(); upstream && *upstream >= 400 && *upstream < 600) {
    return *upstream;
  }
  return error_shape(error.code()).status;
}

nlohmann::json error_body(const Error& error) {
  ErrorShape shape = error_shape(error.code());
  std::string message = error.message();
  if (!error.detail().empty()) {
    message += "\n\n" + error.detail();
  }
  nlohmann::json param =
      error.param().empty() ? nlohmann::json(nullptr) : nlohmann::json(error.param());
  return {{"error",
           {{"message", std::move(message)},
            {"type", shape.type},
            {"param", std::move(param)},
            {"code", shape.code}}}};
}

net::Headers json_headers() {
  return net::Headers{{"Content-Type", "application/json"}};
}

net::Headers error_headers(const Error& error) {
  net::Headers headers = json_headers();
  if (auto seconds = error.retry_after(); seconds && *seconds > 0) {
    headers.add("Retry-After", std::to_string(*seconds));
  }
  return headers;
}

void send_json(net::ResponseWriter& writer, int status, const nlohmann::json& j) {
  writer.send(status, json_headers(), json_text(j));
}

std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lemon::http
