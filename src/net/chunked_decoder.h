// The chunked transfer coding's decoder, used by the server (request bodies)
// and the upstream client (backend answers).
//
// Internal to src/net. Thread-safety: a ChunkedDecoder belongs to one
// message.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace lemon::net::wire {

// Incremental decoder for the chunked transfer coding (RFC 9112 7.1). Data
// pieces are handed out as soon as bytes arrive (no waiting for a whole
// chunk). Strict: hex sizes without sign or overflow, every line ended by
// CRLF, after a size only extensions (whitespace only before their ';'),
// each `name[=token or quoted-string]`, and trailer lines that are field
// lines; extensions (4 KiB a line) and trailer fields (64 KiB in all) are
// bounded, checked and skipped.
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
    kSizeWS,        // whitespace after the size: a ';' must follow
    kExtNameStart,  // after ';' (and whitespace): an extension's name
    kExtName,
    kExtAfterName,   // whitespace after a name: '=' or ';' must follow
    kExtValueStart,  // after '=' (and whitespace): a token or a quoted string
    kExtToken,
    kExtQuoted,
    kExtQuotedEscape,
    kExtQuoteEnd,    // just after a quoted value: ';' or the line end
    kExtAfterValue,  // whitespace after a value: a ';' must follow
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
  // One byte of a chunk-size line after the size; nullptr when it is fine.
  const char* extension_byte(char c);

  std::uint64_t max_body_;
  State state_ = State::kSizeStart;
  std::uint64_t size_ = 0;
  std::uint64_t remaining_ = 0;
  std::uint64_t total_ = 0;
  std::size_t line_bytes_ = 0;
  std::size_t trailer_bytes_ = 0;
  bool too_large_ = false;
  const char* error_ = "";
  std::string trailer_line_;  // the trailer field line being read
};

}  // namespace lemon::net::wire
