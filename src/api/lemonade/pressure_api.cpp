#include "lemon/api/lemonade/pressure_api.h"

#include "lemon/http/caller.h"
#include "lemon/http/error_response.h"
#include "lemon/http/json_request.h"

namespace lemon::api {
namespace {

bool is_loopback_address(const std::string& address) {
  return address.starts_with("127.") || address == "::1" || address.starts_with("::ffff:127.");
}

}  // namespace

void PressureApi::register_routes(http::ApiRoutes& routes) {
  routes.root(
      "POST", "/internal/simulate-vram-pressure", http::RouteAccess::kJsonPost, http::Scope::kAdmin,
      [this](net::Request& r, net::ResponseWriter& w, std::string_view) {
        if (http::caller_key(r) == nullptr && !is_loopback_address(r.remote_addr)) {
          http::write_error(w, Error(ErrorCode::kForbidden,
                                     "simulate-vram-pressure needs an admin key, or a client on "
                                     "this machine when no keys are configured"));
          return;
        }
        auto body = http::parse_json_object(r.body.empty() ? std::string_view("{}") : r.body);
        if (!body.ok()) {
          http::write_error(w, body.error());
          return;
        }
        auto pct = body->find("pct");
        if (pct != body->end() && !pct->is_null() && !pct->is_number()) {
          http::write_error(w, Error(ErrorCode::kInvalidRequest, "'pct' must be a number", "pct"));
          return;
        }
        const double used = pct != body->end() && pct->is_number() ? pct->get<double>() : 0.0;
        const std::vector<std::string> unloaded = router_.relieve_pressure(used);
        http::send_json(w, 200, {{"status", "ok"}, {"unloaded", unloaded}});
      });
}

}  // namespace lemon::api
