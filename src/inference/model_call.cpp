// InferenceGateway::call_model: a JSON call the router makes itself (a
// routing classifier's), with a lease like any request and a deadline.
#include <chrono>

#include "lemon/core/text.h"
#include "lemon/inference/answer_buffer.h"
#include "lemon/inference/inference_gateway.h"

namespace lemon::inference {
namespace {

using Clock = std::chrono::steady_clock;

Error timed_out(const std::string& model, Clock::time_point started) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started).count();
  return Error(ErrorCode::kGatewayTimeout,
               "'" + model + "' did not answer within " + std::to_string(ms) + " ms");
}

}  // namespace

Result<nlohmann::json> InferenceGateway::call_model(const std::string& model, ApiRoute route,
                                                    nlohmann::json body,
                                                    std::chrono::steady_clock::time_point deadline,
                                                    const std::function<bool()>& cancelled) {
  const auto started = Clock::now();
  const auto gone = [&] { return Clock::now() >= deadline || (cancelled && cancelled()); };
  WaitHooks hooks;
  hooks.tick_interval = std::chrono::milliseconds(50);
  hooks.cancelled = gone;
  auto lease = provisioner_.acquire(model, hooks, model_type_for_route(route));
  if (!lease.ok()) {
    if (lease.error().code() == ErrorCode::kCancelled && Clock::now() >= deadline) {
      return timed_out(model, started);
    }
    return std::move(lease).error();
  }
  WrappedServer& server = lease->server();
  auto path = server.upstream_path(route);
  if (!path) {
    return Error(ErrorCode::kUnsupportedOperation,
                 std::string(api_route_name(route)) + " is not supported by recipe '" +
                     server.model().recipe + "'",
                 "model");
  }
  body["model"] = model;
  body["stream"] = false;
  std::string text;
  if (auto custom = server.rewrite_body(route, body)) {
    text = std::move(*custom);
  } else {
    text = body.dump();
  }
  ProxyCall call = limited_call(*path, "application/json", false);
  call.body = text;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) {
    return timed_out(model, started);
  }
  if (call.request_timeout.count() == 0 || left < call.request_timeout) {
    call.request_timeout = left;
  }
  call.cancelled = cancelled;
  AnswerBuffer answer(gone);
  StatsStore own;  // the router's own calls stay out of /stats
  const ProxyOutcome outcome = forward_to_backend(*lease, call, answer, own);
  if (!outcome.stats) {
    if (outcome.backend_error == ErrorCode::kGatewayTimeout || Clock::now() >= deadline) {
      return timed_out(model, started);
    }
    return Error(outcome.backend_error.value_or(ErrorCode::kUpstreamProtocol),
                 "'" + model + "' answered " + std::to_string(answer.status()) + ": " +
                     std::string(utf8_prefix(answer.body(), 200)));
  }
  auto parsed = nlohmann::json::parse(answer.body(), nullptr, false);
  if (parsed.is_discarded()) {
    return Error(ErrorCode::kUpstreamProtocol, "'" + model + "' answered something not JSON");
  }
  return parsed;
}

}  // namespace lemon::inference
