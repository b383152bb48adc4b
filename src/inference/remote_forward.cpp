// InferenceGateway's remote models: the request goes to the
// model's endpoints in turn, as remote/endpoint_health.h orders them.
#include <algorithm>

#include "lemon/core/log.h"
#include "lemon/http/multipart.h"
#include "lemon/inference/backend_form.h"
#include "lemon/inference/inference_gateway.h"

namespace lemon::inference {

using http::multipart_boundary;
using http::parse_multipart;
using http::write_error;
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

// The remote's path for `route` after its base URL: OpenAI's names, and
// "rerank", which lemonade-router, llama-server and vLLM all serve.
std::string remote_path(ApiRoute route) {
  return route == ApiRoute::kReranking ? "rerank" : api_route_name(route);
}

// Statuses that another endpoint may answer better: the remote refused this
// router's key (its configuration, not the client's request), or it is
// overloaded, restarting or cannot reach its own backend.
const std::vector<int> kTryAnotherEndpoint = {401, 403, 502, 503, 504};

bool key_refused(int status) {
  return status == 401 || status == 403;
}

// Backend failures that count against an endpoint's health: the connection
// failed or was lost. Not the router's own limits (a timeout, an answer
// over --max-response-size), which a client could fire at will.
bool endpoint_fault(ErrorCode code) {
  return code == ErrorCode::kBackendUnavailable || code == ErrorCode::kBackendCrashed;
}

}  // namespace

bool InferenceGateway::forward_remote(InferenceRequest& req, net::ResponseWriter& w,
                                      bool& known_model, std::optional<RequestStats>& stats) {
  auto model = remote_->model(req.model);
  if (!model.ok()) {
    if (model.error().code() == ErrorCode::kModelNotFound) {
      return false;  // not (or no longer) a remote model: the local path
    }
    write_error(w, model.error(), framing_for(req.route));
    return true;
  }
  (void)known_model;
  const remote::RemoteModel& remote = **model;
  if (req.route == ApiRoute::kTokenize) {
    write_error(
        w, Error(ErrorCode::kUnsupportedOperation,
                 "counting tokens is not supported for remote model '" + req.model + "'", "model"));
    return true;
  }
  std::string owned;
  std::string content_type = req.content_type;
  if (Status made = remote_body(req, remote.spec.checkpoint, owned, content_type); !made.ok()) {
    write_error(w, made.error(), framing_for(req.route));
    return true;
  }
  const std::string_view body = owned.empty() ? req.raw_body : std::string_view(owned);
  remote.in_flight.fetch_add(1);
  struct Done {
    const remote::RemoteModel& model;
    ~Done() { model.in_flight.fetch_sub(1); }
  } done{remote};
  const auto order = remote.order();
  std::optional<UnansweredFailure> last;
  std::optional<ProxyCall> last_call;
  std::string last_endpoint;
  for (std::size_t n = 0; n < order.size(); ++n) {
    remote::RemoteEndpoint& endpoint = *remote.endpoints[order[n]];
    ProxyCall call =
        make_call(req, endpoint.spec().url.path + "/" + remote_path(req.route), content_type);
    call.body = body;
    call.defer_retryable = true;
    call.defer_lost = true;
    call.defer_statuses = kTryAnotherEndpoint;
    call.connect_timeout = endpoint.spec().connect_timeout;
    call.heartbeat = req.stream ? settings().stream_heartbeat : std::chrono::milliseconds(0);
    // A shutdown's drain that ran out ends a remote call as it ends a local
    // backend (which it stops).
    call.cancelled = [this] { return drain_expired_.load(); };
    if (endpoint.spec().request_timeout.count() > 0) {
      call.request_timeout = endpoint.spec().request_timeout;
    }
    remote::RemoteEndpoint::InFlight in_flight(endpoint);
    endpoint.requests.fetch_add(1);
    // The endpoint answered whole: it is healthy before the client has the
    // answer's end (release() runs just before it is written).
    auto outcome = forward_to_target({endpoint.client(), req.model,
                                      [&] {
                                        in_flight.release();
                                        remote_->report_success(endpoint);
                                      }},
                                     call, w, stats_);
    if (!outcome.unanswered) {
      if (!outcome.stats && outcome.backend_error && endpoint_fault(*outcome.backend_error) &&
          !drain_expired_.load()) {
        remote_->report_failure(
            endpoint, std::string("a request failed: ") + error_code_name(*outcome.backend_error));
      } else if (outcome.stopped) {
        write_error(w,
                    Error(ErrorCode::kShuttingDown,
                          "the router is shutting down: --drain-timeout passed before this "
                          "request to '" +
                              req.model + "' finished"),
                    framing_for(req.route));
      }
      stats = outcome.stats;
      return true;
    }
    const UnansweredFailure& failure = *outcome.unanswered;
    std::string why;
    if (failure.kind == UnansweredFailure::Kind::kUnreachable) {
      why = failure.error.message();
      remote_->report_failure(endpoint, why);
    } else if (key_refused(failure.status)) {
      why = "it refused this router's key (" + std::to_string(failure.status) + ")";
      remote_->report_failure(endpoint, why, /*key_refused=*/true);
    } else if (std::find(kTryAnotherEndpoint.begin(), kTryAnotherEndpoint.end(), failure.status) !=
               kTryAnotherEndpoint.end()) {
      why = "it answered " + std::to_string(failure.status);  // busy, not broken
    } else {
      remote_->report_success(endpoint);  // it answered: its answer is the client's
      write_unanswered(w, req.model, call, failure);
      return true;
    }
    if (n + 1 < order.size()) {
      logger("http")->warn("'{}': endpoint {} did not serve it ({}); trying the next", req.model,
                           endpoint.spec().base_url, why);
    }
    last = failure;
    last_call = std::move(call);
    last_endpoint = endpoint.spec().base_url;
  }
  if (!last) {
    write_error(w,
                Error(ErrorCode::kBackendUnavailable,
                      "no endpoint of remote model '" + req.model +
                          "' can be used (see its endpoints in /health)",
                      "model"),
                framing_for(req.route));
  } else if (last->kind == UnansweredFailure::Kind::kRejected && key_refused(last->status)) {
    // Not the client's key: this router's key for the remote is wrong.
    write_error(w,
                Error(ErrorCode::kBackendUnavailable,
                      "remote endpoint " + last_endpoint + " of '" + req.model +
                          "' refused this router's key (" + std::to_string(last->status) +
                          "): check its api_key_env or api_key_file",
                      "model"),
                framing_for(req.route));
  } else {
    write_unanswered(w, req.model, *last_call, *last);
  }
  return true;
}

}  // namespace lemon::inference
