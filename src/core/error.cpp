#include "lemon/core/error.h"

#include <cstring>

namespace lemon {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidRequest:
      return "invalid_request";
    case ErrorCode::kUnauthorized:
      return "unauthorized";
    case ErrorCode::kForbidden:
      return "forbidden";
    case ErrorCode::kRateLimited:
      return "rate_limited";
    case ErrorCode::kModelNotFound:
      return "model_not_found";
    case ErrorCode::kModelNotLoaded:
      return "model_not_loaded";
    case ErrorCode::kUnsupportedOperation:
      return "unsupported_operation";
    case ErrorCode::kServedRemotely:
      return "served_remotely";
    case ErrorCode::kRouteNotFound:
      return "route_not_found";
    case ErrorCode::kMethodNotAllowed:
      return "method_not_allowed";
    case ErrorCode::kPayloadTooLarge:
      return "payload_too_large";
    case ErrorCode::kUnsupportedMediaType:
      return "unsupported_media_type";
    case ErrorCode::kRequestTimeout:
      return "request_timeout";
    case ErrorCode::kUriTooLong:
      return "uri_too_long";
    case ErrorCode::kHeadersTooLarge:
      return "headers_too_large";
    case ErrorCode::kNotImplemented:
      return "not_implemented";
    case ErrorCode::kVersionNotSupported:
      return "version_not_supported";
    case ErrorCode::kUpgradeRequired:
      return "upgrade_required";
    case ErrorCode::kModelFilesMissing:
      return "model_files_missing";
    case ErrorCode::kInvalidUserArgs:
      return "invalid_user_args";
    case ErrorCode::kUnknownRecipe:
      return "unknown_recipe";
    case ErrorCode::kBackendBinaryMissing:
      return "backend_binary_missing";
    case ErrorCode::kInvalidOption:
      return "invalid_option";
    case ErrorCode::kInvalidRoutingPolicy:
      return "invalid_routing_policy";
    case ErrorCode::kBackendExited:
      return "backend_exited";
    case ErrorCode::kBackendStartTimeout:
      return "backend_start_timeout";
    case ErrorCode::kBackendLoadStalled:
      return "backend_load_stalled";
    case ErrorCode::kSpawnFailed:
      return "spawn_failed";
    case ErrorCode::kBackendUnavailable:
      return "backend_unavailable";
    case ErrorCode::kBackendCrashed:
      return "backend_crashed";
    case ErrorCode::kUpstreamProtocol:
      return "upstream_protocol";
    case ErrorCode::kGatewayTimeout:
      return "gateway_timeout";
    case ErrorCode::kCancelled:
      return "cancelled";
    case ErrorCode::kShuttingDown:
      return "shutting_down";
    case ErrorCode::kDraining:
      return "draining";
    case ErrorCode::kServerBusy:
      return "server_busy";
    case ErrorCode::kQueueFull:
      return "queue_full";
    case ErrorCode::kConflict:
      return "conflict";
    case ErrorCode::kModelInUse:
      return "model_in_use";
    case ErrorCode::kConfigFileInvalid:
      return "config_file_invalid";
    case ErrorCode::kStorageReadOnly:
      return "storage_read_only";
    case ErrorCode::kConfigNotSaved:
      return "config_not_saved";
    case ErrorCode::kReservedModelName:
      return "reserved_model_name";
    case ErrorCode::kInvalidAlias:
      return "invalid_alias";
    case ErrorCode::kAliasConflict:
      return "alias_conflict";
    case ErrorCode::kAliasNotFound:
      return "alias_not_found";
    case ErrorCode::kSlotsPinned:
      return "slots_pinned";
    case ErrorCode::kRemoteNotFound:
      return "remote_not_found";
    case ErrorCode::kRemoteUnauthorized:
      return "remote_unauthorized";
    case ErrorCode::kRemoteForbidden:
      return "remote_forbidden";
    case ErrorCode::kNetworkError:
      return "network_error";
    case ErrorCode::kChecksumMismatch:
      return "checksum_mismatch";
    case ErrorCode::kInsufficientStorage:
      return "insufficient_storage";
    case ErrorCode::kInsufficientMemory:
      return "insufficient_memory";
    case ErrorCode::kOutOfMemory:
      return "out_of_memory";
    case ErrorCode::kSessionNotFound:
      return "session_not_found";
    case ErrorCode::kSessionBusy:
      return "session_busy";
    case ErrorCode::kSessionLost:
      return "session_lost";
    case ErrorCode::kPromptTooLong:
      return "prompt_too_long";
    case ErrorCode::kOffline:
      return "offline";
    case ErrorCode::kInvalidArchive:
      return "invalid_archive";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "internal";
}

std::string errno_message(int err) {
  char buf[256];
  // GNU strerror_r returns the message (maybe a static string, maybe buf).
  const char* text = ::strerror_r(err, buf, sizeof buf);
  return text != nullptr ? std::string(text) : "error " + std::to_string(err);
}

bool is_retryable_load_failure(ErrorCode code) {
  switch (code) {
    case ErrorCode::kBackendExited:
    case ErrorCode::kBackendStartTimeout:
    case ErrorCode::kBackendLoadStalled:
    case ErrorCode::kSpawnFailed:
    case ErrorCode::kOutOfMemory:
      return true;
    default:
      return false;
  }
}

}  // namespace lemon
