#include "lemon/http/request_fields.h"

#include <algorithm>

namespace lemon::http {

Error bad_field(std::string message, std::string param) {
  return Error(ErrorCode::kInvalidRequest, std::move(message), std::move(param));
}

std::string indexed(const std::string& where, std::size_t i) {
  return where + "[" + std::to_string(i) + "]";
}

std::optional<Error> unknown_key(const nlohmann::json& obj,
                                 std::initializer_list<const char*> known, const std::string& where,
                                 std::string_view api) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const bool listed =
        std::any_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; });
    if (!listed) {
      const std::string field = where.empty() ? it.key() : where + "." + it.key();
      return bad_field("'" + field + "' is not supported by lemonade-router's " + std::string(api),
                       field);
    }
  }
  return std::nullopt;
}

}  // namespace lemon::http
