#include "lemon/inference/backend_form.h"

namespace lemon::inference {

std::string make_boundary(const std::vector<FormField>& fields) {
  for (unsigned attempt = 0;; ++attempt) {
    std::string boundary = "lemonade-router-form-" + std::to_string(attempt);
    bool clash = false;
    for (const auto& f : fields) {
      clash = clash || f.data.find(boundary) != std::string::npos;
    }
    if (!clash) {
      return boundary;
    }
  }
}

std::string write_multipart(const std::vector<FormField>& fields, std::string_view boundary) {
  // Quotes in names and file names are escaped as %22 (RFC 7578 4.2).
  auto quoted = [](const std::string& text) {
    std::string out;
    for (char c : text) {
      if (c == '"') {
        out += "%22";
      } else if (c == '\r' || c == '\n') {
        out += ' ';
      } else {
        out += c;
      }
    }
    return out;
  };
  std::string out;
  for (const auto& f : fields) {
    out += "--";
    out += boundary;
    out += "\r\nContent-Disposition: form-data; name=\"" + quoted(f.name) + "\"";
    if (!f.filename.empty()) {
      out += "; filename=\"" + quoted(f.filename) + "\"";
    }
    out += "\r\n";
    if (!f.content_type.empty()) {
      out += "Content-Type: " + quoted(f.content_type) + "\r\n";
    }
    out += "\r\n";
    out += f.data;
    out += "\r\n";
  }
  out += "--";
  out += boundary;
  out += "--\r\n";
  return out;
}

}  // namespace lemon::inference
