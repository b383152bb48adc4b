// HTTP/1.1 wire format pieces shared by the server and the upstream client:
// finding the end of a message head, parsing request and status lines with
// their header fields, and body framing fields (the chunked coding's
// decoder is in chunked_decoder.h).
//
// Internal to src/net. Thread-safety: functions are pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "lemon/net/message.h"

namespace lemon::net::wire {

// Grammar pieces shared by the head parser and the chunked decoder.
bool is_tchar(char c);  // a token character (RFC 9110 5.6.2)
bool is_ctl(char c);    // a control character other than HTAB (RFC 9110 5.5)
// What is wrong with a field line (RFC 9112 5), given without its CRLF;
// nullptr when nothing is.
const char* field_line_error(std::string_view line);

// Longest request line (method, target, version), 414 beyond.
inline constexpr std::size_t kMaxRequestLine = 8192;
// Most header fields in one message (431 beyond for requests).
inline constexpr std::size_t kMaxHeaderFields = 100;

// Offset just past the empty line that ends a message head (CRLF CRLF; a bare
// LF also ends it, so a request using one is rejected at once rather than
// waited for), searching from `from` (a hint: bytes before it were
// already searched), or npos.
std::size_t find_head_end(std::string_view buf, std::size_t from = 0);

// Whether `buf` has a CR followed by anything but LF, from `from` on: a bare
// CR, which makes a request head invalid (RFC 9112 2.2) and could keep its
// end from being found. A CR that is the last byte may still be followed by
// its LF.
bool has_bare_cr(std::string_view buf, std::size_t from = 0);

enum class HeadError {
  kNone,
  kMalformed,            // 400
  kUriTooLong,           // 414
  kTooManyFields,        // 431
  kNotImplemented,       // 501: CONNECT, which the server does not implement
  kVersionNotSupported,  // 505: a major version other than 1 (HTTP/2.0 in plain text)
};

struct RequestHead {
  std::string method;
  std::string target;
  int minor_version = 1;  // HTTP/1.<minor>
  Headers headers;
};

struct ResponseHead {
  int minor_version = 1;
  int status = 0;
  Headers headers;
};

// Parses a complete request head (as delimited by find_head_end), strictly
// (RFC 9112): CRLF line ends, a token method, an origin-, absolute- or
// asterisk-form (OPTIONS only) target without a fragment, HTTP/1.x (a minor
// version above 1 is read as 1.1, RFC 9110 2.5), no obs-fold, no CTLs, no
// space before a colon, at most kMaxHeaderFields fields, and exactly one
// Host in HTTP/1.1 (at most one in 1.0) whose value is a host and optional
// port. An absolute-form target's authority replaces that Host's value
// (RFC 9112 3.2.2). On an error, `why` says what was wrong.
HeadError parse_request_head(std::string_view head, RequestHead& out, std::string& why);

// Parses a complete response head; a bare LF line end is tolerated (RFC 9112
// 2.2). False (with `why`) when malformed.
bool parse_response_head(std::string_view head, ResponseHead& out, std::string& why);

// True if any field called `name` lists `token` (comma-separated,
// case-insensitive), e.g. Connection: keep-alive, Upgrade.
bool has_token(const Headers& headers, std::string_view name, std::string_view token);

enum class LengthField { kAbsent, kValid, kInvalid };

// Whether several Content-Length values that agree are accepted: requests
// reject any duplicate; responses may repeat one value (RFC 9112
// 6.3).
enum class Duplicates { kReject, kAllowIdentical };

// Content-Length: absent, valid, or invalid (non-digits, conflicting
// values, or a duplicate under kReject). Leading zeros are allowed; a value
// past what 64 bits hold is valid and read as the largest one, so that it
// is refused as too large rather than malformed.
LengthField content_length(const Headers& headers, std::uint64_t& length,
                           Duplicates duplicates = Duplicates::kReject);

enum class TransferCoding {
  kNone,
  kChunked,      // exactly "chunked"
  kUnsupported,  // chunked last, after codings this server does not decode (501)
  kOther,        // chunked not last, or repeated: the length is unknown (400)
};

// Transfer-Encoding: which of the above (RFC 9112 6.1, 6.3).
TransferCoding transfer_coding(const Headers& headers);

}  // namespace lemon::net::wire
