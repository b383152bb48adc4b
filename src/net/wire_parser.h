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

// Longest request-target we accept (414 beyond).
inline constexpr std::size_t kMaxTarget = 8192;
// Longest request line: target plus room for method, version and spaces.
inline constexpr std::size_t kMaxRequestLine = kMaxTarget + 64;

// Offset just past the empty line that ends a message head (CRLF CRLF, with
// bare LF tolerated), searching from `from` (a hint: bytes before it were
// already searched), or npos.
std::size_t find_head_end(std::string_view buf, std::size_t from = 0);

enum class HeadError {
  kNone,
  kMalformed,   // 400
  kUriTooLong,  // 414
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

// Parses a complete request head (as delimited by find_head_end). On
// kMalformed, `why` says what was wrong.
HeadError parse_request_head(std::string_view head, RequestHead& out, std::string& why);

// Parses a complete response head. False (with `why`) when malformed.
bool parse_response_head(std::string_view head, ResponseHead& out, std::string& why);

// True if any field called `name` lists `token` (comma-separated,
// case-insensitive), e.g. Connection: keep-alive, Upgrade.
bool has_token(const Headers& headers, std::string_view name, std::string_view token);

enum class LengthField { kAbsent, kValid, kInvalid };

// Content-Length: absent, valid (all fields and list members agree), or
// invalid (non-digits, overflow, conflicting values).
LengthField content_length(const Headers& headers, std::uint64_t& length);

enum class TransferCoding { kNone, kChunked, kOther };

// Transfer-Encoding: none, exactly "chunked", or something else (another
// coding, or chunked not last / repeated).
TransferCoding transfer_coding(const Headers& headers);

// Incremental decoder for the chunked transfer coding. Data pieces are handed
// out as soon as bytes arrive (no waiting for a whole chunk); chunk
// extensions and trailer fields are skipped.
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
    kSizeTail,  // whitespace or extensions after the size
    kSizeLF,
    kData,
    kDataCR,
    kDataLF,
    kTrailerStart,
    kTrailer,
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
