// Parsing and checking JSON request bodies before anything is loaded
// (each route checks its required fields and their types). Every
// failure is kInvalidRequest naming the field in param.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"
#include "lemon/net/message.h"

namespace lemon::http {

// Parses the body as a JSON object. Malformed JSON -> kInvalidRequest whose
// message names the parse error; nesting deeper than 256 levels is refused
// before parsing.
Result<nlohmann::json> parse_json_object(std::string_view body);

// Field checks. `required` fields must be present; optional ones may be
// absent or null.
Result<std::string> string_field(const nlohmann::json& body, const char* name, bool required);
Result<bool> bool_field(const nlohmann::json& body, const char* name, bool fallback);

// Reads the fields of a JSON object body one after another and keeps the
// first failure, so a handler reads them all and checks once:
//   FieldReader in(*body);
//   const std::string model = in.string("model", true);
//   const bool stream = in.boolean("stream", false);
//   if (wrote_error(w, in.status())) { return; }
// A read after a failure returns its fallback and keeps the first failure.
class FieldReader {
 public:
  explicit FieldReader(const nlohmann::json& body) : body_(body) {}
  std::string string(const char* name, bool required = false);
  bool boolean(const char* name, bool fallback = false);
  // Any other check's result: its value, or `fallback` keeping its failure.
  template <class T>
  T take(Result<T> result, T fallback = T{}) {
    if (result.ok()) {
      return std::move(result).value();
    }
    if (status_.ok()) {
      status_ = std::move(result).error();
    }
    return fallback;
  }
  const Status& status() const { return status_; }

 private:
  const nlohmann::json& body_;
  Status status_;
};

// A management request: a JSON object body naming a model in "model_name"
// (or "model", as Lemonade accepts both); the name is required.
struct ModelRequest {
  nlohmann::json body;
  std::string model;
};
Result<ModelRequest> parse_model_request(std::string_view body);

}  // namespace lemon::http
