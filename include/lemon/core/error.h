// Typed errors for every layer of lemonade-router.
//
// An Error is classified once, where it is born (the spawn layer maps errno,
// the backend client maps HTTP status, the catalogue maps a missing file), and
// code above only ever branches on code(). The message is for humans and is
// never parsed. Result<T> carries either a value or an Error; Status is
// Result<void>.
//
// Thread-safety: values; no shared state.
#pragma once

#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace lemon {

enum class ErrorCode {
  // Client errors.
  kInvalidRequest,        // malformed body, bad field type, missing field
  kUnauthorized,          // missing or wrong API key
  kForbidden,             // CSRF / origin rejected; an API key without the scope or model
  kRateLimited,           // an API key over its requests a minute or requests at once
  kModelNotFound,         // unknown model name
  kModelNotLoaded,        // unload of a model that is not loaded
  kUnsupportedOperation,  // route not served by this model's type or recipe
  kServedRemotely,        // a remote model: never loaded or unloaded here
  kRouteNotFound,         // unknown path
  kMethodNotAllowed,      // known path, wrong method
  kPayloadTooLarge,       // body over the configured limit
  kUnsupportedMediaType,  // POST body without the Content-Type the route takes
  kRequestTimeout,        // the client did not send its head or body in time
  kUriTooLong,            // request line over the limit
  kHeadersTooLarge,       // head over the size or field-count limit
  kNotImplemented,        // a method, transfer coding or another API's route not implemented
  kVersionNotSupported,   // an HTTP major version other than 1
  kUpgradeRequired,  // a WebSocket route asked without an upgrade, or another WebSocket version

  // Load failures that a retry cannot fix: never trigger evict-all.
  kModelFilesMissing,     // resolved file(s) absent on disk
  kInvalidUserArgs,       // llamacpp_args names a router-owned flag, bad quoting
  kUnknownRecipe,         // recipe we have no WrappedServer for
  kBackendBinaryMissing,  // no executable found for recipe/backend
  kInvalidOption,         // bad option value (unknown backend name, ...)
  kInvalidRoutingPolicy,  // a collection.router policy that does not parse or check

  // Load failures that evict-all-then-retry may fix.
  kBackendExited,        // child exited before becoming ready
  kBackendStartTimeout,  // child never became ready within --load-timeout
  kBackendLoadStalled,   // child stopped reporting load progress for --load-stall-timeout
  kSpawnFailed,          // fork/exec failed for a resource reason
  kOutOfMemory,  // the backend ran out of memory while loading (its output, or the OOM killer)

  // Runtime failures.
  kBackendUnavailable,  // cannot reach a loaded backend (crashed, refused)
  kBackendCrashed,      // backend died during the request
  kUpstreamProtocol,    // backend answered something that is not HTTP/JSON
  kGatewayTimeout,      // --request-timeout or --stream-idle-timeout fired
  kCancelled,           // the waiting client went away
  kShuttingDown,        // router is stopping
  kDraining,     // the HTTP server drains after SIGTERM: no new request on an open connection
  kServerBusy,   // --max-connections or --max-request-memory reached
  kQueueFull,    // --max-queued-requests requests already wait for this model or in all
  kConflict,     // the model is busy with a conflicting operation (delete vs pull)
  kModelInUse,   // a delete of a model that a collection names as a component
  kSlotsPinned,  // a load could start only by evicting a pinned model
  kInsufficientMemory,  // a model does not fit its device's memory budget even alone
  kSessionNotFound,     // no session with that id (never was, ended, or expired)
  kSessionBusy,         // the session is generating: no second generate, no append
  kSessionLost,         // the session's server was evicted, unloaded or crashed
  kPromptTooLong,       // the prompt has more tokens than --max-prefill-tokens allows
  kConfigFileInvalid,   // a JSON file the router must change is not a JSON object (a user's edit)
  kStorageReadOnly,     // a file cannot be written: its folder is read-only or not ours
  kConfigNotSaved,      // a setting applied to this run only: config.json could not be written
  kReservedModelName,   // a registration under "builtin." or "extra." (Lemonade 11's ids)
  kInvalidAlias,        // an alias that names itself or takes a reserved prefix
  kAliasConflict,       // an alias that is a model's name, or that would loop
  kAliasNotFound,       // DELETE of an alias that does not exist

  // Download failures (model store, backend installer).
  kRemoteNotFound,       // the hub/release server has no such repository, revision or file
  kRemoteUnauthorized,   // 401: gated or private, no (valid) token
  kRemoteForbidden,      // 403: token lacks access
  kNetworkError,         // DNS, connect, TLS, reset, stall, unexpected HTTP status
  kChecksumMismatch,     // a downloaded file does not match its published hash
  kInsufficientStorage,  // not enough free disk space, or ENOSPC while writing
  kOffline,              // LEMONADE_OFFLINE: the operation needs the network
  kInvalidArchive,       // a downloaded archive is damaged or has entries that escape its folder
  kInternal,
};

// Every ErrorCode, in declaration order (for tables and their tests).
inline constexpr ErrorCode kAllErrorCodes[] = {
    ErrorCode::kInvalidRequest,
    ErrorCode::kUnauthorized,
    ErrorCode::kForbidden,
    ErrorCode::kRateLimited,
    ErrorCode::kModelNotFound,
    ErrorCode::kModelNotLoaded,
    ErrorCode::kUnsupportedOperation,
    ErrorCode::kServedRemotely,
    ErrorCode::kRouteNotFound,
    ErrorCode::kMethodNotAllowed,
    ErrorCode::kPayloadTooLarge,
    ErrorCode::kUnsupportedMediaType,
    ErrorCode::kRequestTimeout,
    ErrorCode::kUriTooLong,
    ErrorCode::kHeadersTooLarge,
    ErrorCode::kNotImplemented,
    ErrorCode::kVersionNotSupported,
    ErrorCode::kUpgradeRequired,
    ErrorCode::kModelFilesMissing,
    ErrorCode::kInvalidUserArgs,
    ErrorCode::kUnknownRecipe,
    ErrorCode::kBackendBinaryMissing,
    ErrorCode::kInvalidOption,
    ErrorCode::kInvalidRoutingPolicy,
    ErrorCode::kBackendExited,
    ErrorCode::kBackendStartTimeout,
    ErrorCode::kBackendLoadStalled,
    ErrorCode::kSpawnFailed,
    ErrorCode::kOutOfMemory,
    ErrorCode::kBackendUnavailable,
    ErrorCode::kBackendCrashed,
    ErrorCode::kUpstreamProtocol,
    ErrorCode::kGatewayTimeout,
    ErrorCode::kCancelled,
    ErrorCode::kShuttingDown,
    ErrorCode::kDraining,
    ErrorCode::kServerBusy,
    ErrorCode::kQueueFull,
    ErrorCode::kConflict,
    ErrorCode::kModelInUse,
    ErrorCode::kSlotsPinned,
    ErrorCode::kInsufficientMemory,
    ErrorCode::kSessionNotFound,
    ErrorCode::kSessionBusy,
    ErrorCode::kSessionLost,
    ErrorCode::kPromptTooLong,
    ErrorCode::kConfigFileInvalid,
    ErrorCode::kStorageReadOnly,
    ErrorCode::kConfigNotSaved,
    ErrorCode::kReservedModelName,
    ErrorCode::kInvalidAlias,
    ErrorCode::kAliasConflict,
    ErrorCode::kAliasNotFound,
    ErrorCode::kRemoteNotFound,
    ErrorCode::kRemoteUnauthorized,
    ErrorCode::kRemoteForbidden,
    ErrorCode::kNetworkError,
    ErrorCode::kChecksumMismatch,
    ErrorCode::kInsufficientStorage,
    ErrorCode::kOffline,
    ErrorCode::kInvalidArchive,
    ErrorCode::kInternal,
};
static_assert(std::size(kAllErrorCodes) == static_cast<std::size_t>(ErrorCode::kInternal) + 1,
              "kAllErrorCodes must list every ErrorCode");

// Stable snake_case name, e.g. "model_files_missing". Used in logs and tests.
const char* error_code_name(ErrorCode code);

// The text for an errno value (thread-safe, unlike strerror).
std::string errno_message(int err);

// True for load failures where evicting every server and retrying once may
// help (resource exhaustion, a crashed or hung start). False for failures a
// retry cannot fix (missing files, bad arguments, unknown recipe, missing
// binary). Seed 000 "Error Handling"; Lemonade 9.4.1 evicted everything and
// retried on any failure but a missing file.
bool is_retryable_load_failure(ErrorCode code);

class Error {
 public:
  Error(ErrorCode code, std::string message, std::string param = {})
      : code_(code), message_(std::move(message)), param_(std::move(param)) {}

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The request field the error is about ("model", "messages", ...), or "".
  const std::string& param() const { return param_; }

  // Backend output tail or other detail appended for the client.
  const std::string& detail() const { return detail_; }
  Error&& with_detail(std::string detail) && {
    detail_ = std::move(detail);
    return std::move(*this);
  }
  // The HTTP status a backend answered with, when the error came from one.
  std::optional<int> upstream_status() const { return upstream_status_; }
  Error&& with_upstream_status(int status) && {
    upstream_status_ = status;
    return std::move(*this);
  }
  // Seconds after which the client may try again (sent as Retry-After).
  std::optional<int> retry_after() const { return retry_after_; }
  Error&& with_retry_after(int seconds) && {
    retry_after_ = seconds;
    return std::move(*this);
  }

 private:
  ErrorCode code_;
  std::string message_;
  std::string param_;
  std::string detail_;
  std::optional<int> upstream_status_;
  std::optional<int> retry_after_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T value_or(T fallback) const& { return ok() ? std::get<0>(v_) : std::move(fallback); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T& operator*() & { return std::get<0>(v_); }
  const T& operator*() const& { return std::get<0>(v_); }
  T&& operator*() && { return std::get<0>(std::move(v_)); }

  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : e_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return !e_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const& { return *e_; }
  Error&& error() && { return std::move(*e_); }

 private:
  std::optional<Error> e_;
};

using Status = Result<void>;

inline Status ok_status() {
  return Status{};
}

}  // namespace lemon
