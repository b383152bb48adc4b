#include "wire_parser.h"

#include <algorithm>

#include "ascii.h"
#include "lemon/core/text.h"

namespace lemon::net::wire {
namespace {

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

// Target characters: no whitespace or CTLs (obs-text tolerated), and no
// fragment: '#' is in no request-target form (RFC 9112 3.2).
bool is_target(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u > 0x20 && u != 0x7f && c != '#';
  });
}

bool is_unreserved_or_sub_delim(char c) {
  return ascii::is_alnum(c) ||
         std::string_view("-._~!$&'()*+,;=").find(c) != std::string_view::npos;
}

bool is_hex(char c) {
  return ascii::hex_value(c) >= 0;
}

// A Host field value: uri-host [ ":" port ] (RFC 9110 7.2, RFC 3986 3.2.2),
// or empty. uri-host is an IP literal in brackets or a reg-name (which
// covers IPv4 addresses): unreserved characters, sub-delims and
// percent-escapes.
bool is_host_value(std::string_view v) {
  std::size_t i = 0;
  if (!v.empty() && v.front() == '[') {
    const auto close = v.find(']');
    if (close == std::string_view::npos || close == 1) {
      return false;
    }
    for (char c : v.substr(1, close - 1)) {
      if (c != ':' && !is_unreserved_or_sub_delim(c)) {
        return false;
      }
    }
    i = close + 1;
  } else {
    while (i < v.size() && v[i] != ':') {
      if (v[i] == '%') {
        if (i + 2 >= v.size() || !is_hex(v[i + 1]) || !is_hex(v[i + 2])) {
          return false;
        }
        i += 3;
        continue;
      }
      if (!is_unreserved_or_sub_delim(v[i])) {
        return false;
      }
      ++i;
    }
  }
  if (i == v.size()) {
    return true;
  }
  if (v[i] != ':') {
    return false;
  }
  const std::string_view port = v.substr(i + 1);
  return std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The authority of an absolute-form target ("http://host:port/...").
std::string_view absolute_authority(std::string_view target) {
  std::string_view rest = target.substr(target.find("//") + 2);
  return rest.substr(0, rest.find_first_of("/?"));
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
    if (const char* error = field_line_error(line)) {
      why = error;
      return FieldsError::kMalformed;
    }
    const auto colon = line.find(':');
    headers.add(std::string(line.substr(0, colon)), std::string(trim_ows(line.substr(colon + 1))));
  }
  why = "header section is not terminated";
  return FieldsError::kMalformed;
}

enum class Version { kValid, kMalformed, kOtherMajor };

// HTTP-version = "HTTP/" DIGIT "." DIGIT (RFC 9112 2.3), case-sensitive. A
// minor version above 1 is read as 1 (RFC 9110 2.5); a major version other
// than 1 is well-formed but not this protocol.
Version parse_version(std::string_view v, int& minor) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (v.size() != 8 || v.substr(0, 5) != "HTTP/" || !digit(v[5]) || v[6] != '.' || !digit(v[7])) {
    return Version::kMalformed;
  }
  if (v[5] != '1') {
    return Version::kOtherMajor;
  }
  minor = std::min(v[7] - '0', 1);
  return Version::kValid;
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

bool is_ctl(char c) {
  auto u = static_cast<unsigned char>(c);
  return (u < 0x20 && u != '\t') || u == 0x7f;
}

const char* field_line_error(std::string_view line) {
  if (!line.empty() && (line.front() == ' ' || line.front() == '\t')) {
    return "obsolete line folding in header field";
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) {
    return "header field without ':'";
  }
  if (!is_token(line.substr(0, colon))) {
    return "invalid header field name";
  }
  if (!is_field_value(trim_ows(line.substr(colon + 1)))) {
    return "invalid character in header field value";
  }
  return nullptr;
}

bool has_bare_cr(std::string_view buf, std::size_t from) {
  for (std::size_t i = buf.find('\r', from); i != std::string_view::npos;
       i = buf.find('\r', i + 1)) {
    if (i + 1 < buf.size() && buf[i + 1] != '\n') {
      return true;
    }
  }
  return false;
}

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
  if (method == "CONNECT") {
    why = "CONNECT is not implemented";  // this is no proxy (RFC 9110 9.3.6)
    return HeadError::kNotImplemented;
  }
  const bool absolute = target.starts_with("http://") || target.starts_with("https://");
  if (target.empty() || !is_target(target) ||
      !(target.front() == '/' || (target == "*" && method == "OPTIONS") || absolute) ||
      // The authority becomes the request's Host (below), so it is held to
      // what a Host value may be; userinfo ("user@") is refused with it
      // (RFC 9110 4.2.4).
      (absolute &&
       (absolute_authority(target).empty() || !is_host_value(absolute_authority(target))))) {
    why = "bad request target";
    return HeadError::kMalformed;
  }
  switch (parse_version(version, out.minor_version)) {
    case Version::kValid:
      break;
    case Version::kMalformed:
      why = "bad HTTP version";
      return HeadError::kMalformed;
    case Version::kOtherMajor:
      why = "HTTP version " + std::string(version.substr(5)) + " is not supported";
      return HeadError::kVersionNotSupported;
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
    if (iequals(field.first, "Host")) {
      ++hosts;
      if (!is_host_value(field.second)) {
        why = "invalid Host header";
        return HeadError::kMalformed;
      }
    }
  }
  if (hosts > 1 || (hosts == 0 && out.minor_version == 1)) {
    why = hosts == 0 ? "no Host header" : "more than one Host header";
    return HeadError::kMalformed;
  }
  if (absolute) {
    // The target's authority is the request's host; the Host field sent with
    // it is ignored (RFC 9112 3.2.2), so every later check reads one host.
    out.headers.set("Host", std::string(absolute_authority(out.target)));
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
  if (line.size() < 12 || parse_version(line.substr(0, 8), out.minor_version) != Version::kValid ||
      line[8] != ' ' || (line.size() > 12 && line[12] != ' ')) {
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
    if (member.empty() ||
        !std::all_of(member.begin(), member.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      state = LengthField::kInvalid;
      return;
    }
    constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t value = 0;
    for (char c : member) {
      const auto d = static_cast<std::uint64_t>(c - '0');
      value = value > (kMax - d) / 10 ? kMax : value * 10 + d;  // saturates
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
  if (chunked == 1 && last_chunked) {
    return TransferCoding::kUnsupported;
  }
  return TransferCoding::kOther;
}

}  // namespace lemon::net::wire
