#include "lemon/net/message.h"

#include <algorithm>

#include "ascii.h"
#include "lemon/core/text.h"

namespace lemon::net {
namespace {

// ASCII only, as HTTP's tokens are (RFC 9110 5.1): no locale, no call (the
// header lookups run for every request).
char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

using ascii::hex_value;

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) {
      return false;
    }
  }
  return true;
}

std::optional<std::string_view> Headers::get(std::string_view name) const {
  for (const auto& [key, value] : fields_) {
    if (iequals(key, name)) {
      return std::string_view(value);
    }
  }
  return std::nullopt;
}

void Headers::add(std::string name, std::string value) {
  fields_.emplace_back(std::move(name), std::move(value));
}

void Headers::set(std::string name, std::string value) {
  auto first = std::find_if(fields_.begin(), fields_.end(),
                            [&](const auto& f) { return iequals(f.first, name); });
  if (first == fields_.end()) {
    fields_.emplace_back(std::move(name), std::move(value));
    return;
  }
  first->first = std::move(name);
  first->second = std::move(value);
  const std::string& kept = first->first;
  auto index = first - fields_.begin();
  fields_.erase(std::remove_if(fields_.begin() + index + 1, fields_.end(),
                               [&](const auto& f) { return iequals(f.first, kept); }),
                fields_.end());
}

void Headers::remove(std::string_view name) {
  fields_.erase(std::remove_if(fields_.begin(), fields_.end(),
                               [&](const auto& f) { return iequals(f.first, name); }),
                fields_.end());
}

std::optional<std::string> Request::query_param(std::string_view key) const {
  for (std::string_view pair : split(query, '&')) {
    if (pair.empty()) {
      continue;
    }
    auto eq = pair.find('=');
    std::string_view raw_key = pair.substr(0, eq);
    if (url_decode(raw_key, true) != key) {
      continue;
    }
    if (eq == std::string_view::npos) {
      return std::string();
    }
    return url_decode(pair.substr(eq + 1), true);
  }
  return std::nullopt;
}

std::string Headers::media_type() const {
  auto value = get("Content-Type");
  if (!value) {
    return {};
  }
  std::string_view type = trim_ows(value->substr(0, value->find(';')));
  std::string out(type);
  std::transform(out.begin(), out.end(), out.begin(), lower);
  return out;
}

std::string url_decode(std::string_view in, bool plus_as_space) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%' && i + 2 < in.size()) {
      int hi = hex_value(in[i + 1]);
      int lo = hex_value(in[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_as_space && c == '+' ? ' ' : c);
  }
  return out;
}

const char* status_reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 101:
      return "Switching Protocols";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 303:
      return "See Other";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 416:
      return "Range Not Satisfiable";
    case 417:
      return "Expectation Failed";
    case 422:
      return "Unprocessable Entity";
    case 426:
      return "Upgrade Required";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 499:
      return "Client Closed Request";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    case 505:
      return "HTTP Version Not Supported";
    case 507:
      return "Insufficient Storage";
    default:
      break;
  }
  if (status >= 100 && status < 200) {
    return "Informational";
  }
  if (status >= 200 && status < 300) {
    return "Success";
  }
  if (status >= 300 && status < 400) {
    return "Redirection";
  }
  if (status >= 400 && status < 500) {
    return "Client Error";
  }
  return "Server Error";
}

std::optional<std::size_t> utf8_prefix(std::string_view text, bool complete) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      lo = c == 0xE0 ? 0xA0 : 0x80;  // no overlong forms
      hi = c == 0xED ? 0x9F : 0xBF;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      lo = c == 0xF0 ? 0x90 : 0x80;  // no overlong forms
      hi = c == 0xF4 ? 0x8F : 0xBF;  // nothing past U+10FFFF
    } else {
      return std::nullopt;
    }
    for (std::size_t k = 1; k < len; ++k) {
      if (i + k >= text.size()) {
        // A character cut by the end: fine while more may follow.
        if (complete) {
          return std::nullopt;
        }
        return i;
      }
      const auto next = static_cast<unsigned char>(text[i + k]);
      const unsigned char low = k == 1 ? lo : 0x80;
      const unsigned char high = k == 1 ? hi : 0xBF;
      if (next < low || next > high) {
        return std::nullopt;
      }
    }
    i += len;
  }
  return i;
}

bool valid_utf8(std::string_view text) {
  return utf8_prefix(text, true).has_value();
}

}  // namespace lemon::net
