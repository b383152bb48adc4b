#include "lemon/http/route_table.h"

#include "lemon/http/error_response.h"

namespace lemon::http {

const std::vector<std::string>& RouteTable::api_prefixes() {
  static const std::vector<std::string> kPrefixes = {"/api/v1/", "/api/v0/", "/v1/", "/v0/"};
  return kPrefixes;
}

void RouteTable::add(const std::string& method, const std::string& path, RouteHandler handler) {
  static const std::string kParam = "{id}";
  if (path.size() > kParam.size() &&
      path.compare(path.size() - kParam.size(), kParam.size(), kParam) == 0) {
    std::string base = path.substr(0, path.size() - kParam.size());
    for (auto& [b, methods] : with_param_) {
      if (b == base) {
        methods.by_method.emplace_back(method, std::move(handler));
        return;
      }
    }
    Methods m;
    m.by_method.emplace_back(method, std::move(handler));
    with_param_.emplace_back(base, std::move(m));
    return;
  }
  exact_[path].by_method.emplace_back(method, std::move(handler));
}

void RouteTable::add_api(const std::string& method, const std::string& suffix,
                         const RouteHandler& handler) {
  for (const auto& prefix : api_prefixes()) {
    add(method, prefix + suffix, handler);
  }
}

void RouteTable::add_root(const std::string& method, const std::string& path,
                          RouteHandler handler) {
  add(method, path, std::move(handler));
}

const RouteTable::Methods* RouteTable::find(std::string_view path, std::string_view& param) const {
  std::string key(path);
  if (key.size() > 1 && key.back() == '/') {
    key.pop_back();  // "/v1/models/" is "/v1/models"
  }
  if (auto it = exact_.find(key); it != exact_.end()) {
    param = {};
    return &it->second;
  }
  for (const auto& [base, methods] : with_param_) {
    if (path.size() > base.size() && path.substr(0, base.size()) == base) {
      param = path.substr(base.size());
      return &methods;
    }
  }
  return nullptr;
}

void RouteTable::dispatch(net::Request& request, net::ResponseWriter& writer) const {
  std::string_view param;
  const Methods* methods = find(request.path, param);
  if (methods == nullptr) {
    Error e(ErrorCode::kRouteNotFound, "no route for " + request.method + " " + request.path);
    writer.send(404, json_headers(), error_body(e).dump());
    return;
  }
  const std::string& method = request.method == "HEAD" ? std::string("GET") : request.method;
  for (const auto& [m, handler] : methods->by_method) {
    if (m == method) {
      handler(request, writer, param);
      return;
    }
  }
  std::string allow;
  for (const auto& [m, handler] : methods->by_method) {
    allow += (allow.empty() ? "" : ", ") + m;
  }
  Error e(ErrorCode::kMethodNotAllowed,
          request.method + " is not allowed on " + request.path + "; use " + allow);
  net::Headers h = json_headers();
  h.add("Allow", allow);
  writer.send(405, h, error_body(e).dump());
}

}  // namespace lemon::http
