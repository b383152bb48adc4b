#include "lemon/http/autoload_param.h"

namespace lemon::http {

std::optional<bool> autoload_param(const net::Request& request) {
  auto value = request.query_param("autoload");
  if (!value || value->empty()) {
    return std::nullopt;
  }
  return *value == "true" || *value == "1";
}

}  // namespace lemon::http
