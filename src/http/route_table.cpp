#include "lemon/http/route_table.h"

#include <algorithm>

#include "lemon/http/error_response.h"

namespace lemon::http {

const std::vector<std::string>& RouteTable::api_prefixes() {
  static const std::vector<std::string> kPrefixes = {"/api/v1/", "/api/v0/", "/v1/", "/v0/"};
  return kPrefixes;
}

void RouteTable::add(const std::string& method, const std::string& path, RouteHandler handler,
                     int tag) {
  if (std::find(known_methods_.begin(), known_methods_.end(), method) == known_methods_.end()) {
    known_methods_.push_back(method);
  }
  static const std::string kParam = "{id}";
  if (path.size() > kParam.size() &&
      path.compare(path.size() - kParam.size(), kParam.size(), kParam) == 0) {
    std::string base = path.substr(0, path.size() - kParam.size());
    for (auto& [b, methods] : with_param_) {
      if (b == base) {
        methods.by_method.push_back({method, std::move(handler), tag});
        return;
      }
    }
    Methods m;
    m.by_method.push_back({method, std::move(handler), tag});
    with_param_.emplace_back(base, std::move(m));
    return;
  }
  exact_[path].by_method.push_back({method, std::move(handler), tag});
}

void RouteTable::add_api(const std::string& method, const std::string& suffix,
                         const RouteHandler& handler, int tag) {
  for (const auto& prefix : api_prefixes()) {
    add(method, prefix + suffix, handler, tag);
  }
}

void RouteTable::add_root(const std::string& method, const std::string& path, RouteHandler handler,
                          int tag) {
  add(method, path, std::move(handler), tag);
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

RouteTable::Match RouteTable::match(std::string_view method, std::string_view path) const {
  Match out;
  // A method HTTP does not define is 501 on any path; looked for only once
  // no route matched, so a served request pays nothing for it.
  auto unknown_method = [&] {
    return std::find(known_methods_.begin(), known_methods_.end(), method) == known_methods_.end();
  };
  const Methods* methods = find(path, out.param);
  if (methods == nullptr) {
    out.status = unknown_method() ? 501 : 404;
    return out;
  }
  const std::string_view wanted = method == "HEAD" ? std::string_view("GET") : method;
  for (const auto& route : methods->by_method) {
    if (route.method == wanted) {
      out.handler = &route.handler;
      out.tag = route.tag;
      return out;
    }
  }
  if (unknown_method()) {
    out.status = 501;
    return out;
  }
  out.status = 405;
  // A path's routes share their tag's dialect (ApiServer), so a refusal can
  // be answered in it.
  out.tag = methods->by_method.empty() ? 0 : methods->by_method.front().tag;
  for (const auto& route : methods->by_method) {
    out.allow += (out.allow.empty() ? "" : ", ") + route.method;
  }
  return out;
}

net::EarlyAnswer RouteTable::refusal(const Match& match, const net::Request& request) {
  net::EarlyAnswer answer;
  answer.status = match.status;
  answer.headers = json_headers();
  if (match.status == 405) {
    Error e(ErrorCode::kMethodNotAllowed,
            request.method + " is not allowed on " + request.path + "; use " + match.allow);
    answer.headers.add("Allow", match.allow);
    answer.body = error_envelope(e);
  } else if (match.status == 501) {
    answer.body = error_envelope(
        Error(ErrorCode::kNotImplemented, "method " + request.method + " is not implemented"));
  } else {
    Error e(ErrorCode::kRouteNotFound, "no route for " + request.method + " " + request.path);
    answer.body = error_envelope(e);
  }
  return answer;
}

void RouteTable::dispatch(net::Request& request, net::ResponseWriter& writer) const {
  Match m = match(request.method, request.path);
  if (m.handler == nullptr) {
    auto answer = refusal(m, request);
    writer.send(answer.status, answer.headers, answer.body);
    return;
  }
  (*m.handler)(request, writer, m.param);
}

}  // namespace lemon::http
