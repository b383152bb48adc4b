// Refusing a request body's fields by name, for the parsers of the foreign
// dialects (Anthropic's Messages API, Ollama's API): every refusal is a 400
// invalid_request_error whose `param` is the field's path ("messages[2].content").
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lemon/core/error.h"

namespace lemon::http {

// kInvalidRequest about the field at `param`.
Error bad_field(std::string message, std::string param);

// The path of element `i` of the array at `where`: "messages[2]".
std::string indexed(const std::string& where, std::size_t i);

// The refusal of the first key of `obj` not in `known` ("'x.y' is not
// supported by lemonade-router's <api>"), or nothing when every key is known.
std::optional<Error> unknown_key(const nlohmann::json& obj,
                                 std::initializer_list<const char*> known, const std::string& where,
                                 std::string_view api);

}  // namespace lemon::http
