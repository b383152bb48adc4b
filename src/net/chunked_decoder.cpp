#include "chunked_decoder.h"

#include <algorithm>

#include "ascii.h"
#include "wire_parser.h"

namespace lemon::net::wire {
namespace {

constexpr std::size_t kMaxChunkLine = 4096;
constexpr std::size_t kMaxTrailerBytes = 64u << 10;

}  // namespace

ChunkedDecoder::Step ChunkedDecoder::fail(const char* why) {
  error_ = why;
  state_ = State::kDone;
  return Step::kError;
}

bool ChunkedDecoder::line_done() {
  line_bytes_ = 0;
  if (size_ == 0) {
    state_ = State::kTrailerStart;
    return true;
  }
  if (size_ > max_body_ || total_ > max_body_ - size_) {
    too_large_ = true;
    return false;
  }
  total_ += size_;
  remaining_ = size_;
  state_ = State::kData;
  return true;
}

const char* ChunkedDecoder::extension_byte(char c) {
  // chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] )
  // (RFC 9112 7.1.1): whitespace may come before a ';' or '=' and after
  // them, never before the line's end.
  const bool ws = c == ' ' || c == '\t';
  switch (state_) {
    case State::kSizeWS:         // after the size
    case State::kExtAfterValue:  // after a value
      if (c == ';') {
        state_ = State::kExtNameStart;
      } else if (!ws) {
        return state_ == State::kSizeWS ? "bad chunk size" : "bad chunk extension";
      }
      return nullptr;
    case State::kExtNameStart:
      if (is_tchar(c)) {
        state_ = State::kExtName;
      } else if (!ws) {
        return "bad chunk extension";
      }
      return nullptr;
    case State::kExtName:
    case State::kExtToken:
    case State::kExtQuoteEnd:  // in, or just after, a name or a value
      if (is_tchar(c) && state_ != State::kExtQuoteEnd) {
        return nullptr;
      }
      if (c == '\r') {
        state_ = State::kSizeLF;
      } else if (c == ';') {
        state_ = State::kExtNameStart;
      } else if (c == '=' && state_ == State::kExtName) {
        state_ = State::kExtValueStart;
      } else if (ws) {
        state_ = state_ == State::kExtName ? State::kExtAfterName : State::kExtAfterValue;
      } else {
        return "bad chunk extension";
      }
      return nullptr;
    case State::kExtAfterName:  // whitespace after a name: '=' or ';' must follow
      if (c == '=') {
        state_ = State::kExtValueStart;
      } else if (c == ';') {
        state_ = State::kExtNameStart;
      } else if (!ws) {
        return "bad chunk extension";
      }
      return nullptr;
    case State::kExtValueStart:
      if (c == '"') {
        state_ = State::kExtQuoted;
      } else if (is_tchar(c)) {
        state_ = State::kExtToken;
      } else if (!ws) {
        return "bad chunk extension";
      }
      return nullptr;
    case State::kExtQuoted:  // qdtext, quoted-pair (RFC 9110 5.6.4)
      if (c == '"') {
        state_ = State::kExtQuoteEnd;
      } else if (c == '\\') {
        state_ = State::kExtQuotedEscape;
      } else if (is_ctl(c)) {
        return "bad chunk extension";
      }
      return nullptr;
    case State::kExtQuotedEscape:
      if (is_ctl(c)) {
        return "bad chunk extension";
      }
      state_ = State::kExtQuoted;
      return nullptr;
    default:
      return "bad chunk extension";
  }
}

ChunkedDecoder::Step ChunkedDecoder::next(std::string_view& in, std::string_view& piece) {
  if (too_large_) {
    return Step::kTooLarge;
  }
  if (!*error_ && state_ == State::kDone) {
    return Step::kDone;
  }
  if (*error_) {
    return Step::kError;
  }
  while (!in.empty()) {
    if (state_ == State::kData) {
      auto n = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, in.size()));
      piece = in.substr(0, n);
      in.remove_prefix(n);
      remaining_ -= n;
      if (remaining_ == 0) {
        state_ = State::kDataCR;
      }
      return Step::kData;
    }
    char c = in.front();
    in.remove_prefix(1);
    switch (state_) {
      case State::kSizeStart:
      case State::kSize: {
        const int digit = ascii::hex_value(c);
        if (digit >= 0) {
          if (size_ > (std::numeric_limits<std::uint64_t>::max() >> 4)) {
            return fail("chunk size overflows");
          }
          size_ = size_ * 16 + static_cast<std::uint64_t>(digit);
          state_ = State::kSize;
          ++line_bytes_;
          break;
        }
        if (state_ == State::kSizeStart) {
          return fail("chunk size expected");
        }
        if (c == '\r') {
          state_ = State::kSizeLF;
          break;
        }
        state_ = State::kSizeWS;
        [[fallthrough]];
      }
      case State::kSizeWS:
      case State::kExtNameStart:
      case State::kExtName:
      case State::kExtAfterName:
      case State::kExtValueStart:
      case State::kExtToken:
      case State::kExtQuoted:
      case State::kExtQuotedEscape:
      case State::kExtQuoteEnd:
      case State::kExtAfterValue:
        if (++line_bytes_ > kMaxChunkLine) {
          return fail("chunk size line too long");
        }
        if (const char* error = extension_byte(c)) {
          return fail(error);
        }
        break;
      case State::kSizeLF:
        if (c != '\n') {
          return fail("chunk size line not ended by CRLF");
        }
        if (!line_done()) {
          return Step::kTooLarge;
        }
        break;
      case State::kDataCR:
        if (c != '\r') {
          return fail("chunk data not followed by CRLF");
        }
        state_ = State::kDataLF;
        break;
      case State::kDataLF:
        if (c != '\n') {
          return fail("chunk data not followed by CRLF");
        }
        state_ = State::kSizeStart;
        size_ = 0;
        break;
      case State::kTrailerStart:
        if (c == '\r') {
          state_ = State::kEndLF;
          break;
        }
        state_ = State::kTrailer;
        [[fallthrough]];
      case State::kTrailer:  // trailer fields: field lines, bounded, skipped
        if (++trailer_bytes_ > kMaxTrailerBytes) {
          return fail("chunked trailer too large");
        }
        if (c == '\r') {
          state_ = State::kTrailerLF;
        } else if (is_ctl(c)) {
          return fail("bad chunked trailer");
        } else {
          trailer_line_ += c;
        }
        break;
      case State::kTrailerLF:
        if (c != '\n') {
          return fail("trailer line not ended by CRLF");
        }
        if (field_line_error(trailer_line_) != nullptr) {
          return fail("bad chunked trailer field");
        }
        trailer_line_.clear();
        state_ = State::kTrailerStart;
        break;
      case State::kEndLF:
        if (c != '\n') {
          return fail("chunked body not ended by CRLF");
        }
        state_ = State::kDone;
        return Step::kDone;
      case State::kData:
      case State::kDone:
        break;
    }
  }
  return Step::kNeedMore;
}

}  // namespace lemon::net::wire
