#include "lemon/http/api_dialect.h"

#include "lemon/http/error_response.h"

namespace lemon::http {

const char* anthropic_error_type(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    case 504:
      return "timeout_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

std::string dialect_error_body(ApiDialect dialect, int status, const std::string& message) {
  switch (dialect) {
    case ApiDialect::kAnthropic:
      return json_text({{"type", "error"},
                        {"error", {{"type", anthropic_error_type(status)}, {"message", message}}}});
    case ApiDialect::kOllama:
      return json_text({{"error", message}});
    case ApiDialect::kLemonade:
      break;
  }
  return json_text({{"error", {{"message", message}, {"type", error_type_for_status(status)}}}});
}

DialectError dialect_error(ApiDialect dialect, const Error& error) {
  DialectError out;
  out.status = error_status(error);
  out.headers = error_headers(error);
  if (dialect == ApiDialect::kLemonade) {
    out.body = error_envelope(error);
    return out;
  }
  std::string message = error.message();
  if (!error.detail().empty()) {
    message += "\n\n" + error.detail();
  }
  out.body = dialect_error_body(dialect, out.status, message);
  return out;
}

std::string dialect_stream_error(ApiDialect dialect, int status, const std::string& message) {
  switch (dialect) {
    case ApiDialect::kAnthropic:
      return "event: error\ndata: " + dialect_error_body(dialect, status, message) + "\n\n";
    case ApiDialect::kOllama:
      return dialect_error_body(dialect, status, message) + "\n";
    case ApiDialect::kLemonade:
      break;
  }
  return "data: " + dialect_error_body(dialect, status, message) + "\n\ndata: [DONE]\n\n";
}

}  // namespace lemon::http
