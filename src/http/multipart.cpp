#include "lemon/http/multipart.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "lemon/core/text.h"
#include "lemon/net/message.h"

namespace lemon::http {
namespace {

constexpr std::size_t kMaxBoundary = 200;  // RFC 2046 says 70; be lenient

using Params = std::vector<std::pair<std::string, std::string>>;

std::string lowered(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

Error invalid_multipart(std::string message) {
  return Error(ErrorCode::kInvalidRequest, "invalid multipart body: " + std::move(message));
}

// Splits `value` ("type; a=1; b=\"x;y\"") into the leading token and its
// parameters (names lower-cased, quoted strings unescaped). False when a
// quoted string is not terminated.
bool split_params(std::string_view value, std::string_view& head, Params& params) {
  std::size_t i = value.find(';');
  head = trim_ows(value.substr(0, i));
  while (i != std::string_view::npos && i < value.size()) {
    ++i;  // past ';'
    while (i < value.size() && (value[i] == ' ' || value[i] == '\t')) {
      ++i;
    }
    std::size_t eq = value.find_first_of("=;", i);
    if (eq == std::string_view::npos || value[eq] == ';') {
      // A parameter without a value; skip it.
      i = eq;
      continue;
    }
    std::string name = lowered(trim_ows(value.substr(i, eq - i)));
    i = eq + 1;
    while (i < value.size() && (value[i] == ' ' || value[i] == '\t')) {
      ++i;
    }
    std::string param_value;
    if (i < value.size() && value[i] == '"') {
      ++i;
      bool closed = false;
      while (i < value.size()) {
        char c = value[i++];
        if (c == '\\' && i < value.size()) {
          param_value.push_back(value[i++]);
        } else if (c == '"') {
          closed = true;
          break;
        } else {
          param_value.push_back(c);
        }
      }
      if (!closed) {
        return false;
      }
      i = value.find(';', i);
    } else {
      std::size_t end = value.find(';', i);
      param_value = std::string(trim_ows(value.substr(i, end - i)));
      i = end;
    }
    params.emplace_back(std::move(name), std::move(param_value));
  }
  return true;
}

const std::string* find_param(const Params& params, std::string_view name) {
  for (const auto& [key, value] : params) {
    if (key == name) {
      return &value;
    }
  }
  return nullptr;
}

// RFC 5987 ext-value: charset'language'percent-encoded.
std::string decode_ext_value(std::string_view value) {
  auto first = value.find('\'');
  auto second = first == std::string_view::npos ? first : value.find('\'', first + 1);
  if (second == std::string_view::npos) {
    return std::string(value);
  }
  return net::url_decode(value.substr(second + 1), false);
}

// Applies one part header line to `part`.
Status apply_header(std::string_view line, MultipartPart& part, bool& has_disposition) {
  auto colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) {
    return invalid_multipart("malformed part header '" + std::string(line.substr(0, 80)) + "'");
  }
  std::string_view name = trim_ows(line.substr(0, colon));
  std::string_view value = trim_ows(line.substr(colon + 1));
  if (net::iequals(name, "Content-Type")) {
    part.content_type = std::string(value);
    return ok_status();
  }
  if (!net::iequals(name, "Content-Disposition")) {
    return ok_status();
  }
  std::string_view type;
  Params params;
  if (!split_params(value, type, params)) {
    return invalid_multipart("unterminated quoted string in Content-Disposition");
  }
  if (!net::iequals(type, "form-data")) {
    return invalid_multipart("part Content-Disposition is not form-data");
  }
  has_disposition = true;
  if (const auto* field = find_param(params, "name")) {
    part.name = *field;
  }
  if (const auto* filename = find_param(params, "filename")) {
    part.filename = *filename;
  } else if (const auto* ext = find_param(params, "filename*")) {
    part.filename = decode_ext_value(*ext);
  }
  return ok_status();
}

Status parse_part_headers(std::string_view block, MultipartPart& part) {
  bool has_disposition = false;
  while (!block.empty()) {
    auto crlf = block.find("\r\n");
    std::string_view line = block.substr(0, crlf);
    block = crlf == std::string_view::npos ? std::string_view() : block.substr(crlf + 2);
    if (!line.empty() && (line.front() == ' ' || line.front() == '\t')) {
      return invalid_multipart("folded part header");
    }
    if (auto status = apply_header(line, part, has_disposition); !status.ok()) {
      return status;
    }
  }
  if (!has_disposition) {
    return invalid_multipart("part without Content-Disposition");
  }
  if (part.name.empty()) {
    return invalid_multipart("part without a field name");
  }
  return ok_status();
}

}  // namespace

std::optional<std::string> multipart_boundary(std::string_view content_type) {
  std::string_view type;
  Params params;
  if (!split_params(content_type, type, params)) {
    return std::nullopt;
  }
  if (lowered(type).rfind("multipart/", 0) != 0) {
    return std::nullopt;
  }
  const auto* boundary = find_param(params, "boundary");
  if (boundary == nullptr || boundary->empty() || boundary->size() > kMaxBoundary) {
    return std::nullopt;
  }
  return *boundary;
}

Result<std::vector<MultipartPart>> parse_multipart(std::string_view body,
                                                   std::string_view boundary) {
  if (boundary.empty() || boundary.size() > kMaxBoundary) {
    return invalid_multipart("bad boundary");
  }
  const std::string delimiter = "--" + std::string(boundary);
  const std::string next_delimiter = "\r\n" + delimiter;

  // The first delimiter starts the body or follows a preamble and CRLF.
  std::size_t pos = 0;
  if (!body.starts_with(delimiter)) {
    pos = body.find(next_delimiter);
    if (pos == std::string_view::npos) {
      return invalid_multipart("boundary '" + std::string(boundary) + "' not found");
    }
    pos += 2;
  }
  std::vector<MultipartPart> parts;
  for (;;) {
    pos += delimiter.size();
    if (body.substr(pos, 2) == "--") {
      return parts;  // close delimiter; the epilogue is ignored
    }
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t')) {
      ++pos;  // transport padding
    }
    if (body.substr(pos, 2) != "\r\n") {
      return invalid_multipart(pos >= body.size() ? "body ends after a boundary line"
                                                  : "boundary line not followed by CRLF");
    }
    pos += 2;
    MultipartPart part;
    std::size_t data_start = pos;
    if (body.substr(pos, 2) == "\r\n") {
      data_start = pos + 2;  // a part without header fields
    } else {
      auto end = body.find("\r\n\r\n", pos);
      if (end == std::string_view::npos) {
        return invalid_multipart("part headers are not terminated");
      }
      data_start = end + 4;
      if (auto status = parse_part_headers(body.substr(pos, end - pos), part); !status.ok()) {
        return std::move(status).error();
      }
    }
    if (part.name.empty()) {
      return invalid_multipart("part without Content-Disposition");
    }
    auto next = body.find(next_delimiter, data_start);
    if (next == std::string_view::npos) {
      return invalid_multipart("missing closing boundary");
    }
    part.data = body.substr(data_start, next - data_start);
    parts.push_back(std::move(part));
    pos = next + 2;
  }
}

const MultipartPart* find_part(const std::vector<MultipartPart>& parts, std::string_view name) {
  for (const auto& part : parts) {
    if (part.name == name) {
      return &part;
    }
  }
  return nullptr;
}

}  // namespace lemon::http
