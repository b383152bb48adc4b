#include "wire_parser.h"

#include <algorithm>
#include <cctype>

#include "lemon/core/text.h"

namespace lemon::net::wire {
namespace {

constexpr std::size_t kMaxChunkLine = 4096;
constexpr std::size_t kMaxTrailerBytes = 64u << 10;

bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
    return true;
  }
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar);
}

// Field values: visible characters, SP, HTAB and obs-text; no CTLs.
bool is_field_value(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u == '\t' || (u >= 0x20 && u != 0x7f);
  });
}

// Target characters: no whitespace or CTLs (obs-text tolerated).
bool is_target(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u > 0x20 && u != 0x7f;
  });
}

// The authority of an absolute-form target ("http://host:port/..."): a
// non-empty reg-name, IPv4 or [IPv6] literal with an optional port, in URI
// characters only (RFC 3986 3.2). Userinfo ("user@") is refused (RFC 9110
// 4.2.4).
bool valid_absolute_authority(std::string_view target) {
  std::string_view rest = target.substr(target.find("//") + 2);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?"));
  if (authority.empty()) {
    return false;
  }
  return std::all_of(authority.begin(), authority.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) != 0 ||
           std::string_view("-._~!$&'()*+,;=%:[]").find(c) != std::string_view::npos;
  });
}

// Control characters other than HTAB (RFC 9110 5.5).
bool is_ctl(char c) {
  auto u = static_cast<unsigned char>(c);
  return (u < 0x20 && u != '\t') || u == 0x7f;
}

// Splits `head` into lines. In strict mode (requests) every line must end in
// CRLF; otherwise (responses) a bare LF is tolerated (RFC 9112 2.2). A CR
// anywhere else, or a bare LF in strict mode, marks the line bad.
class LineReader {
 public:
  LineReader(std::string_view head, bool strict) : rest_(head), strict_(strict) {}
  bool next(std::string_view& line, bool& bad) {
    if (rest_.empty()) {
      return false;
    }
    auto lf = rest_.find('\n');
    line = rest_.substr(0, lf);
    rest_ = lf == std::string_view::npos ? std::string_view() : rest_.substr(lf + 1);
    const bool crlf = !line.empty() && line.back() == '\r';
    if (crlf) {
      line.remove_suffix(1);
    }
    bad = line.find('\r') != std::string_view::npos || (strict_ && !crlf);
    return true;
  }

 private:
  std::string_view rest_;
  bool strict_;
};

enum class FieldsError { kNone, kMalformed, kTooMany };

// Fields a usual head has (a client's or llama-server's: 4 to 10); 16
// pairs of strings still come from malloc's per-thread cache.
constexpr std::size_t kUsualFields = 16;

FieldsError parse_fields(LineReader& lines, Headers& headers, std::size_t max_fields,
                         std::string& why) {
  std::string_view line;
  bool bad = false;
  std::size_t count = 0;
  // One allocation for a usual head, not one per doubling.
  headers.reserve(std::min<std::size_t>(max_fields, kUsualFields));
  while (lines.next(line, bad)) {
    if (bad) {
      why = "header line not ended by CRLF";
      return FieldsError::kMalformed;
    }
    if (line.empty()) {
      return FieldsError::kNone;
    }
    if (++count > max_fields) {
      why = "more than " + std::to_string(max_fields) + " header fields";
      return FieldsError::kTooMany;
    }
    if (line.front() == ' ' || line.front() == '\t') {
      why = "obsolete line folding in header field";
      return FieldsError::kMalformed;
    }
    auto colon = line.find(':');
    if (colon == std::string_view::npos) {
      why = "header field without ':'";
      return FieldsError::kMalformed;
    }
    std::string_view name = line.substr(0, colon);
    if (!is_token(name)) {
      why = "invalid header field name";
      return FieldsError::kMalformed;
    }
    std::string_view value = trim_ows(line.substr(colon + 1));
    if (!is_field_value(value)) {
      why = "invalid character in header field value";
      return FieldsError::kMalformed;
    }
    headers.add(std::string(name), std::string(value));
  }
  why = "header section is not terminated";
  return FieldsError::kMalformed;
}

bool parse_version(std::string_view v, int& minor) {
  if (v.size() != 8 || v.substr(0, 7) != "HTTP/1.") {
    return false;
  }
  if (v[7] != '0' && v[7] != '1') {
    return false;
  }
  minor = v[7] - '0';
  return true;
}

template <typename F>
void for_each_list_member(const Headers& headers, std::string_view name, F&& f) {
  for (const auto& [key, value] : headers.fields()) {
    if (!iequals(key, name)) {
      continue;
    }
    std::string_view rest = value;
    while (true) {
      auto comma = rest.find(',');
      f(trim_ows(rest.substr(0, comma)));
      if (comma == std::string_view::npos) {
        break;
      }
      rest.remove_prefix(comma + 1);
    }
  }
}

}  // namespace

std::size_t find_head_end(std::string_view buf, std::size_t from) {
  for (std::size_t i = buf.find('\n', from); i != std::string_view::npos;
       i = buf.find('\n', i + 1)) {
    if (i + 1 < buf.size() && buf[i + 1] == '\n') {
      return i + 2;
    }
    if (i + 2 < buf.size() && buf[i + 1] == '\r' && buf[i + 2] == '\n') {
      return i + 3;
    }
  }
  return std::string_view::npos;
}

HeadError parse_request_head(std::string_view head, RequestHead& out, std::string& why) {
  LineReader lines(head, /*strict=*/true);
  std::string_view line;
  bool bad = false;
  if (!lines.next(line, bad) || bad) {
    why = "request line not ended by CRLF";
    return HeadError::kMalformed;
  }
  if (line.size() > kMaxRequestLine) {
    return HeadError::kUriTooLong;
  }
  auto sp1 = line.find(' ');
  auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    why = "bad request line";
    return HeadError::kMalformed;
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method)) {
    why = "bad method";
    return HeadError::kMalformed;
  }
  const bool absolute = target.starts_with("http://") || target.starts_with("https://");
  if (target.empty() || !is_target(target) ||
      !(target.front() == '/' || (target == "*" && method == "OPTIONS") || absolute) ||
      (absolute && !valid_absolute_authority(target))) {
    why = "bad request target";
    return HeadError::kMalformed;
  }
  if (!parse_version(version, out.minor_version)) {
    why = "unsupported HTTP version";
    return HeadError::kMalformed;
  }
  out.method = std::string(method);
  out.target = std::string(target);
  switch (parse_fields(lines, out.headers, kMaxHeaderFields, why)) {
    case FieldsError::kNone:
      break;
    case FieldsError::kMalformed:
      return HeadError::kMalformed;
    case FieldsError::kTooMany:
      return HeadError::kTooManyFields;
  }
  // RFC 9112 3.2: exactly one Host in HTTP/1.1, at most one in HTTP/1.0.
  std::size_t hosts = 0;
  for (const auto& field : out.headers.fields()) {
    hosts += iequals(field.first, "Host") ? 1 : 0;
  }
  if (hosts > 1 || (hosts == 0 && out.minor_version == 1)) {
    why = hosts == 0 ? "no Host header" : "more than one Host header";
    return HeadError::kMalformed;
  }
  return HeadError::kNone;
}

bool parse_response_head(std::string_view head, ResponseHead& out, std::string& why) {
  LineReader lines(head, /*strict=*/false);
  std::string_view line;
  bool bad = false;
  if (!lines.next(line, bad) || bad) {
    why = "bad status line";
    return false;
  }
  // HTTP/1.x SP 3DIGIT [SP reason]
  if (line.size() < 12 || !parse_version(line.substr(0, 8), out.minor_version) || line[8] != ' ' ||
      (line.size() > 12 && line[12] != ' ')) {
    why = "bad status line";
    return false;
  }
  int status = 0;
  for (std::size_t i = 9; i < 12; ++i) {
    if (line[i] < '0' || line[i] > '9') {
      why = "bad status code";
      return false;
    }
    status = status * 10 + (line[i] - '0');
  }
  if (status < 100) {
    why = "bad status code";
    return false;
  }
  out.status = status;
  return parse_fields(lines, out.headers, kMaxHeaderFields, why) == FieldsError::kNone;
}

bool has_token(const Headers& headers, std::string_view name, std::string_view token) {
  bool found = false;
  for_each_list_member(headers, name,
                       [&](std::string_view member) { found = found || iequals(member, token); });
  return found;
}

LengthField content_length(const Headers& headers, std::uint64_t& length, Duplicates duplicates) {
  LengthField state = LengthField::kAbsent;
  for_each_list_member(headers, "Content-Length", [&](std::string_view member) {
    if (state == LengthField::kInvalid) {
      return;
    }
    if (state == LengthField::kValid && duplicates == Duplicates::kReject) {
      state = LengthField::kInvalid;
      return;
    }
    if (member.empty() || member.size() > 18 ||
        !std::all_of(member.begin(), member.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      state = LengthField::kInvalid;
      return;
    }
    std::uint64_t value = 0;
    for (char c : member) {
      value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (state == LengthField::kValid && value != length) {
      state = LengthField::kInvalid;
      return;
    }
    length = value;
    state = LengthField::kValid;
  });
  return state;
}

TransferCoding transfer_coding(const Headers& headers) {
  if (!headers.has("Transfer-Encoding")) {
    return TransferCoding::kNone;
  }
  int members = 0;
  int chunked = 0;
  bool last_chunked = false;
  for_each_list_member(headers, "Transfer-Encoding", [&](std::string_view member) {
    if (member.empty()) {
      return;
    }
    ++members;
    last_chunked = iequals(member, "chunked");
    chunked += last_chunked ? 1 : 0;
  });
  if (members == 1 && chunked == 1) {
    return TransferCoding::kChunked;
  }
  return TransferCoding::kOther;
}

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
        int digit = -1;
        if (c >= '0' && c <= '9') {
          digit = c - '0';
        } else if (c >= 'a' && c <= 'f') {
          digit = c - 'a' + 10;
        } else if (c >= 'A' && c <= 'F') {
          digit = c - 'A' + 10;
        }
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
        } else if (c == ' ' || c == '\t') {
          state_ = State::kSizeWS;
        } else if (c == ';') {
          state_ = State::kExtension;
        } else {
          return fail("bad chunk size");
        }
        break;
      }
      case State::kSizeWS:  // BWS after the size: only ';' or the line end may follow
        if (++line_bytes_ > kMaxChunkLine) {
          return fail("chunk size line too long");
        }
        if (c == '\r') {
          state_ = State::kSizeLF;
        } else if (c == ';') {
          state_ = State::kExtension;
        } else if (c != ' ' && c != '\t') {
          return fail("bad chunk size");
        }
        break;
      case State::kExtension:  // chunk-ext: skipped, bounded, no CTLs
        if (++line_bytes_ > kMaxChunkLine) {
          return fail("chunk extension too long");
        }
        if (c == '\r') {
          state_ = State::kSizeLF;
        } else if (is_ctl(c)) {
          return fail("bad chunk extension");
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
      case State::kTrailer:  // trailer fields: skipped, bounded, no CTLs
        if (++trailer_bytes_ > kMaxTrailerBytes) {
          return fail("chunked trailer too large");
        }
        if (c == '\r') {
          state_ = State::kTrailerLF;
        } else if (is_ctl(c)) {
          return fail("bad chunked trailer");
        }
        break;
      case State::kTrailerLF:
        if (c != '\n') {
          return fail("trailer line not ended by CRLF");
        }
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
