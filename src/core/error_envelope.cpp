#include "lemon/core/error_envelope.h"

#include <nlohmann/json.hpp>

namespace lemon {

ErrorShape error_shape(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidRequest:
    case ErrorCode::kInvalidOption:
      return {400, "invalid_request_error", "invalid_request_error"};
    case ErrorCode::kInvalidUserArgs:
      return {400, "invalid_request_error", "invalid_llamacpp_args"};
    case ErrorCode::kInvalidRoutingPolicy:
      return {400, "invalid_request_error", "invalid_routing_policy"};
    case ErrorCode::kUnsupportedOperation:
      return {400, "invalid_request_error", "unsupported_operation"};
    case ErrorCode::kServedRemotely:
      return {400, "invalid_request_error", "model_served_remotely"};
    case ErrorCode::kUnauthorized:
      return {401, "authentication_error", "invalid_api_key"};
    case ErrorCode::kForbidden:
      return {403, "permission_error", "forbidden"};
    case ErrorCode::kRateLimited:
      return {429, "rate_limit_error", "rate_limit_exceeded"};
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
    case ErrorCode::kRequestTimeout:
      return {408, "invalid_request_error", "request_timeout"};
    case ErrorCode::kUriTooLong:
      return {414, "invalid_request_error", "uri_too_long"};
    case ErrorCode::kHeadersTooLarge:
      return {431, "invalid_request_error", "headers_too_large"};
    case ErrorCode::kNotImplemented:
      return {501, "server_error", "not_implemented"};
    case ErrorCode::kUpgradeRequired:
      return {426, "invalid_request_error", "upgrade_required"};
    case ErrorCode::kVersionNotSupported:
      return {505, "server_error", "http_version_not_supported"};
    case ErrorCode::kModelFilesMissing:
      return {404, "invalid_request_error", "model_not_downloaded"};
    case ErrorCode::kUnknownRecipe:
    case ErrorCode::kBackendBinaryMissing:
    case ErrorCode::kBackendExited:
    case ErrorCode::kBackendStartTimeout:
    case ErrorCode::kBackendLoadStalled:
    case ErrorCode::kSpawnFailed:
      return {500, "server_error", "model_load_error"};
    case ErrorCode::kBackendUnavailable:
    case ErrorCode::kBackendCrashed:
    case ErrorCode::kShuttingDown:
      return {503, "server_error", "backend_unavailable"};
    case ErrorCode::kQueueFull:
      return {503, "server_error", "queue_full"};
    case ErrorCode::kDraining:
      return {503, "server_error", "shutting_down"};
    case ErrorCode::kServerBusy:
      return {503, "server_error", "server_busy"};
    case ErrorCode::kUpstreamProtocol:
      return {502, "server_error", "bad_gateway"};
    case ErrorCode::kGatewayTimeout:
      return {504, "server_error", "gateway_timeout"};
    case ErrorCode::kCancelled:
      return {499, "invalid_request_error", "client_closed_request"};
    case ErrorCode::kConflict:
      return {409, "invalid_request_error", "conflict"};
    case ErrorCode::kModelInUse:
      return {409, "invalid_request_error", "model_in_use"};
    case ErrorCode::kConfigFileInvalid:
      return {409, "invalid_request_error", "config_file_invalid"};
    case ErrorCode::kStorageReadOnly:
      return {409, "invalid_request_error", "storage_read_only"};
    case ErrorCode::kConfigNotSaved:
      return {409, "invalid_request_error", "config_not_saved"};
    case ErrorCode::kReservedModelName:
      return {400, "invalid_request_error", "reserved_model_name"};
    case ErrorCode::kInvalidAlias:
      return {400, "invalid_request_error", "invalid_alias"};
    case ErrorCode::kAliasConflict:
      return {409, "invalid_request_error", "alias_conflict"};
    case ErrorCode::kAliasNotFound:
      return {404, "invalid_request_error", "alias_not_found"};
    case ErrorCode::kSlotsPinned:
      return {409, "invalid_request_error", "slots_pinned_error"};
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

const char* error_type_for_status(int status) {
  return status >= 500 ? "server_error" : "invalid_request_error";
}

int error_status(const Error& error) {
  if (auto upstream = error.upstream_status(); upstream && *upstream >= 400 && *upstream < 600) {
    return *upstream;
  }
  return error_shape(error.code()).status;
}

std::string error_envelope(const Error& error) {
  ErrorShape shape = error_shape(error.code());
  std::string message = error.message();
  if (!error.detail().empty()) {
    message += "\n\n" + error.detail();
  }
  nlohmann::ordered_json param = error.param().empty() ? nlohmann::ordered_json(nullptr)
                                                       : nlohmann::ordered_json(error.param());
  // ordered_json keeps the documented key order: message, type, param, code.
  nlohmann::ordered_json body = {{"error",
                                  {{"message", std::move(message)},
                                   {"type", shape.type},
                                   {"param", std::move(param)},
                                   {"code", shape.code}}}};
  return body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace lemon
