#include "lemon/http/route_table.h"

#include <algorithm>

#include "lemon/http/error_response.h"

namespace lemon::http {

const std::vector<std::string>& RouteTable::api_prefixes() {
  static const std::vector<std::string> kPrefixes = {"/api/v1/", "/api/v0/", "/v1/", "/v0/"};
  return kPrefixes;
}

RouteTable::Methods& RouteTable::methods_for(const std::string& path) {
  static const std::string kParam = "{id}";
  if (const auto at = path.find(kParam); at != std::string::npos) {
    std::string base = path.substr(0, at);
    std::string suffix = path.substr(at + kParam.size());
    for (auto& p : with_param_) {
      if (p.base == base && p.suffix == suffix) {
        return p.methods;
      }
    }
    with_param_.push_back({std::move(base), std::move(suffix), Methods{}});
    // The longest suffix first: "models/{id}/options" before "models/{id}".
    std::stable_sort(
        with_param_.begin(), with_param_.end(),
        [](const ParamRoute& a, const ParamRoute& b) { return a.suffix.size() > b.suffix.size(); });
    for (auto& p : with_param_) {
      if (p.base == path.substr(0, at) && p.suffix == path.substr(at + kParam.size())) {
        return p.methods;
      }
    }
  }
  return exact_[path];
}

void RouteTable::add(const std::string& method, const std::string& path, RouteHandler handler,
                     int tag, bool websocket) {
  if (std::find(known_methods_.begin(), known_methods_.end(), method) == known_methods_.end()) {
    known_methods_.push_back(method);
  }
  methods_for(path).by_method.push_back({method, std::move(handler), tag, websocket});
}

void RouteTable::add_websocket(const std::string& path, bool api, const RouteHandler& handler,
                               int tag) {
  if (!api) {
    add("GET", path, handler, tag, true);
    return;
  }
  for (const auto& prefix : api_prefixes()) {
    add("GET", prefix + path, handler, tag, true);
  }
}

void RouteTable::add_not_implemented(const std::string& path, std::string why, int tag) {
  Methods& methods = methods_for(path);
  methods.not_implemented = std::move(why);
  methods.tag = tag;
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
  for (const auto& p : with_param_) {
    if (path.size() > p.base.size() + p.suffix.size() && path.starts_with(p.base) &&
        path.ends_with(p.suffix)) {
      param = path.substr(p.base.size(), path.size() - p.base.size() - p.suffix.size());
      return &p.methods;
    }
  }
  return nullptr;
}

RouteTable::Match RouteTable::match(std::string_view method, std::string_view path,
                                    bool upgrade) const {
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
  if (!methods->not_implemented.empty()) {
    out.status = 501;
    out.tag = methods->tag;
    out.why = methods->not_implemented;
    return out;
  }
  const std::string_view wanted = method == "HEAD" ? std::string_view("GET") : method;
  const Route* socket_only = nullptr;
  for (int pass = 0; pass < 2; ++pass) {
    // An upgrade takes the WebSocket route first, a plain request the
    // plain one; either falls back to the other kind only as below.
    const bool want_socket = pass == 0 ? upgrade : !upgrade;
    for (const auto& route : methods->by_method) {
      if (route.method != wanted || route.websocket != want_socket) {
        continue;
      }
      if (route.websocket && !upgrade) {
        socket_only = &route;  // a plain GET of a WebSocket route
        continue;
      }
      out.handler = &route.handler;
      out.tag = route.tag;
      out.websocket = route.websocket;
      return out;
    }
  }
  if (socket_only != nullptr) {
    out.status = 426;
    out.tag = socket_only->tag;
    return out;
  }
  // A path's routes share their tag's dialect (ApiServer), so a refusal can
  // be answered in it.
  out.tag = methods->by_method.empty() ? 0 : methods->by_method.front().tag;
  if (unknown_method()) {
    out.status = 501;
    return out;
  }
  out.status = 405;
  for (const auto& route : methods->by_method) {
    out.allow += (out.allow.empty() ? "" : ", ") + route.method;
  }
  return out;
}

Error RouteTable::refusal_error(const Match& match, const net::Request& request) {
  switch (match.status) {
    case 405:
      return Error(ErrorCode::kMethodNotAllowed,
                   request.method + " is not allowed on " + request.path + "; use " + match.allow);
    case 426:
      return Error(ErrorCode::kUpgradeRequired,
                   request.path + " is a WebSocket: connect with Upgrade: websocket");
    case 501:
      return Error(ErrorCode::kNotImplemented,
                   match.why.empty() ? "method " + request.method + " is not implemented"
                                     : std::string(match.why));
    default:
      return Error(ErrorCode::kRouteNotFound,
                   "no route for " + request.method + " " + request.path);
  }
}

net::EarlyAnswer RouteTable::refusal(const Match& match, const net::Request& request) {
  net::EarlyAnswer answer;
  answer.status = match.status;
  answer.headers = json_headers();
  if (match.status == 405) {
    answer.headers.add("Allow", match.allow);
  }
  if (match.status == 426) {
    answer.headers.add("Upgrade", "websocket");  // RFC 9110 15.5.22
  }
  answer.body = error_envelope(refusal_error(match, request));
  return answer;
}

void RouteTable::remember(const Match& match, net::Request& request) {
  request.matched.handler = match.handler;
  request.matched.param_at =
      match.param.empty() ? std::string::npos
                          : static_cast<std::size_t>(match.param.data() - request.path.data());
  request.matched.param_size = match.param.size();
}

void RouteTable::dispatch(net::Request& request, net::ResponseWriter& writer) const {
  if (request.matched.handler != nullptr) {
    const auto& handler = *static_cast<const RouteHandler*>(request.matched.handler);
    const std::string_view path = request.path;
    handler(request, writer,
            request.matched.param_at < path.size()
                ? path.substr(request.matched.param_at, request.matched.param_size)
                : std::string_view());
    return;
  }
  Match m = match(request.method, request.path, net::is_websocket_upgrade(request));
  if (m.handler == nullptr) {
    auto answer = refusal(m, request);
    writer.send(answer.status, answer.headers, answer.body);
    return;
  }
  (*m.handler)(request, writer, m.param);
}

}  // namespace lemon::http
