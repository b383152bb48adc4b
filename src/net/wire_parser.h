// HTTP/1.1 wire format pieces shared by the server and the upstream client:
// finding the end of a message head, parsing request and status lines with
// their header fields, body framing fields, and an incremental chunked
// transfer-coding decoder.
//
// Internal to src/net. Thread-safety: functions are pure; a ChunkedDecoder
// belongs to one message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "lemon/net/message.h"

namespace lemon::net::wire {

// Longest request line (method, target, version), 414 beyond.
inline constexpr std::size_t kMaxRequestLine = 8192;
// Most header fields in one message (431 beyond for requests).
inline constexpr std::size_t kMaxHeaderFields = 100;

// Offset just past the empty line that ends a message head (CRLF CRLF; a bare
// LF also ends it, so a request using one is rejected at once rather than
// waited for), searching from `from` (a hint: bytes before it were
// already searched), or npos.
std::size_t find_head_end(std::string_view buf, std::size_t from = 0);

enum class HeadError {
  kNone,
  kMalformed,      // 400
  kUriTooLong,     // 414
  kTooManyFields,  // 431
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
// asterisk-form (OPTIONS only) target, HTTP/1.0 or 1.1, no obs-fold, no CTLs,
// no space before a colon, at most kMaxHeaderFields fields, and exactly one
// Host in HTTP/1.1 (at most one in 1.0). On kMalformed, `why` says what was
// wrong.
HeadError parse_request_head(std::string_view head, RequestHead& out, std::string& why);

// Parses a complete response head; a bare LF line end is tolerated (RFC 9112
// 2.2). False (with `why`) when malformed.
bool parse_response_head(std::string_view head, ResponseHead& out, std::string& why);

// True if any field called `name` lists `token` (comma-separated,
// case-insensitive), e.g. Connection: keep-alive, Upgrade.
bool has_token(const Headers& headers, std::string_view name, std::string_view token);

enum class LengthField { kAbsent, kValid, kInvalid };

// Whether several Content-Length values that agree are accepted: requests
// reject any duplicate (issue #11); responses may repeat one value (RFC 9112
// 6.3).
enum class Duplicates { kReject, kAllowIdentical };

// Content-Length: absent, valid, or invalid (non-digits, overflow,
// conflicting values, or a duplicate under kReject).
LengthField content_length(const Headers& headers, std::uint64_t& length,
                           Duplicates duplicates = Duplicates::kReject);

enum class TransferCoding { kNone, kChunked, kOther };

// Transfer-Encoding: none, exactly "chunked", or something else (another
// coding, or chunked not last / repeated).
TransferCoding transfer_coding(const Headers& headers);

// Incremental decoder for the chunked transfer coding (RFC 9112 7.1). Data
// pieces are handed out as soon as bytes arrive (no waiting for a whole
// chunk). Strict: hex sizes without sign or overflow, every line ended by
// CRLF, nothing but whitespace or ';' extensions after a size; extensions
// (4 KiB a line) and trailer fields (64 KiB in all) are bounded and skipped.
class ChunkedDecoder {
 public:
  enum class Step {
    kData,      // `piece` holds decoded bytes (non-empty)
    kNeedMore,  // everything in `in` was consumed; feed more
    kDone,      // the last chunk and trailers were consumed
    kError,     // malformed; see error()
    kTooLarge,  // a chunk-size line pushed the body over max_body
  };

  explicit ChunkedDecoder(std::uint64_t max_body = std::numeric_limits<std::uint64_t>::max())
      : max_body_(max_body) {}

  // Consumes bytes from the front of `in`. Call again until kNeedMore,
  // kDone, kError or kTooLarge. After kDone, `in` holds the bytes following
  // the message.
  Step next(std::string_view& in, std::string_view& piece);

  const char* error() const { return error_; }
  std::uint64_t body_bytes() const { return total_; }

 private:
  enum class State {
    kSizeStart,
    kSize,
    kSizeWS,     // whitespace after the size
    kExtension,  // chunk extensions after ';'
    kSizeLF,
    kData,
    kDataCR,
    kDataLF,
    kTrailerStart,
    kTrailer,
    kTrailerLF,
    kEndLF,
    kDone,
  };

  Step fail(const char* why);
  bool line_done();  // after a chunk-size line; false on kTooLarge

  std::uint64_t max_body_;
  State state_ = State::kSizeStart;
  std::uint64_t size_ = 0;
  std::uint64_t remaining_ = 0;
  std::uint64_t total_ = 0;
  std::size_t line_bytes_ = 0;
  std::size_t trailer_bytes_ = 0;
  bool too_large_ = false;
  const char* error_ = "";
};

}  // namespace lemon::net::wire
