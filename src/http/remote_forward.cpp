// InferenceGateway's remote models (issue #30 §3): the request goes to the
// model's endpoints in turn, as remote/endpoint_health.h orders them.
#include "lemon/core/log.h"
#include "lemon/http/inference_gateway.h"
#include "lemon/http/multipart.h"

namespace lemon::http {
namespace {

// The body the remote takes: the client's, with `model` naming the model
// as the remote knows it. Empty `owned` when the body is used as is.
Status remote_body(const InferenceRequest& req, const std::string& checkpoint, std::string& owned,
                   std::string& content_type) {
  if (req.json != nullptr) {
    nlohmann::json body = *req.json;
    body["model"] = checkpoint;
    owned = body.dump();
    return ok_status();
  }
  std::vector<FormField> fields;
  if (req.form != nullptr) {
    fields = *req.form;
  } else if (auto boundary = multipart_boundary(req.content_type)) {
    auto parts = parse_multipart(req.raw_body, *boundary);
    if (!parts.ok()) {
      return std::move(parts).error();
    }
    for (const auto& p : *parts) {
      fields.push_back(FormField{p.name, p.filename, p.content_type, p.data, nullptr});
    }
  } else {
    return ok_status();  // neither JSON nor a form: as the client sent it
  }
  std::erase_if(fields, [](const FormField& f) { return f.name == "model"; });
  fields.insert(fields.begin(), FormField::text("model", checkpoint));
  const std::string boundary = make_boundary(fields);
  owned = write_multipart(fields, boundary);
  content_type = "multipart/form-data; boundary=" + boundary;
  return ok_status();
}

// An answer that another endpoint may give better: the remote is
// overloaded, restarting or cannot reach its own backend.
bool worth_another_endpoint(const UnansweredFailure& failure) {
  return failure.kind == UnansweredFailure::Kind::kUnreachable || failure.status == 502 ||
         failure.status == 503 || failure.status == 504;
}

}  // namespace

std::optional<RequestStats> InferenceGateway::forward_remote(InferenceRequest& req,
                                                             net::ResponseWriter& w,
                                                             bool& known_model) {
  auto model = remote_->model(req.model);
  if (!model.ok()) {
    if (model.error().code() == ErrorCode::kModelNotFound) {
      known_model = false;
      write_error(w, provisioner_.model_not_found(req.model));
    } else {
      write_error(w, model.error());
    }
    return std::nullopt;
  }
  const remote::RemoteModel& remote = **model;
  if (req.route == ApiRoute::kTokenize) {
    write_error(
        w, Error(ErrorCode::kUnsupportedOperation,
                 "counting tokens is not supported for remote model '" + req.model + "'", "model"));
    return std::nullopt;
  }
  std::string owned;
  std::string content_type = req.content_type;
  if (Status made = remote_body(req, remote.spec.checkpoint, owned, content_type); !made.ok()) {
    write_error(w, made.error());
    return std::nullopt;
  }
  const std::string_view body = owned.empty() ? req.raw_body : std::string_view(owned);
  const auto order = remote.order();
  std::optional<UnansweredFailure> last;
  std::optional<ProxyCall> last_call;
  for (std::size_t n = 0; n < order.size(); ++n) {
    remote::RemoteEndpoint& endpoint = *remote.endpoints[order[n]];
    ProxyCall call =
        make_call(req, endpoint.spec().url.path + "/" + api_route_name(req.route), content_type);
    call.body = body;
    call.defer_retryable = true;
    call.heartbeat = req.stream ? settings_.stream_heartbeat : std::chrono::milliseconds(0);
    if (endpoint.spec().request_timeout.count() > 0) {
      call.request_timeout = endpoint.spec().request_timeout;
    }
    remote::RemoteEndpoint::InFlight in_flight(endpoint);
    endpoint.requests.fetch_add(1);
    auto outcome = forward_to_target(
        {endpoint.client(), req.model, [&in_flight] { in_flight.release(); }}, call, w, stats_);
    if (!outcome.unanswered) {
      if (outcome.stats) {
        remote_->report_success(endpoint);
      }
      return outcome.stats;
    }
    const UnansweredFailure& failure = *outcome.unanswered;
    if (!worth_another_endpoint(failure)) {
      remote_->report_success(endpoint);  // it answered: its answer is the client's
      write_unanswered(w, req.model, call, failure);
      return std::nullopt;
    }
    const std::string why = failure.kind == UnansweredFailure::Kind::kUnreachable
                                ? failure.error.message()
                                : "it answered " + std::to_string(failure.status);
    if (failure.kind == UnansweredFailure::Kind::kUnreachable) {
      remote_->report_failure(endpoint, why);
    }
    if (n + 1 < order.size()) {
      logger("http")->warn("'{}': endpoint {} did not answer ({}); trying the next", req.model,
                           endpoint.spec().base_url, why);
    }
    last = failure;
    last_call = std::move(call);
  }
  if (!last) {
    write_error(w, Error(ErrorCode::kBackendUnavailable,
                         "no endpoint of remote model '" + req.model +
                             "' can be used (see its endpoints in /health)",
                         "model"));
    return std::nullopt;
  }
  write_unanswered(w, req.model, *last_call, *last);
  return std::nullopt;
}

}  // namespace lemon::http
