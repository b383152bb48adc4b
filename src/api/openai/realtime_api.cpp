#include "lemon/api/openai/realtime_api.h"

#include <algorithm>
#include <random>

#include "lemon/core/text.h"
#include "lemon/inference/answer_buffer.h"
#include "lemon/inference/backend_form.h"

namespace lemon::api {
namespace {

std::string session_id() {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "sess_";
  for (int i = 0; i < 24; ++i) {
    id += kHex[random() & 0xF];
  }
  return id;
}

}  // namespace

RealtimeApi::RealtimeApi(inference::InferenceGateway& gateway) : gateway_(gateway) {}

RealtimeApi::~RealtimeApi() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    threads.swap(threads_);
  }
  for (auto& t : threads) {
    t.join();
  }
}

void RealtimeApi::register_routes(http::ApiRoutes& routes) {
  http::SocketRoute route;
  route.scope = http::Scope::kInference;
  route.max_message_bytes = kMaxMessageBytes;
  route.open = [this](const net::Request& r, const http::SocketCaller& caller) {
    return open(r, caller);
  };
  routes.websocket("realtime", std::move(route));
}

Result<std::shared_ptr<http::JsonSocketHandler>> RealtimeApi::open(
    const net::Request& request, const http::SocketCaller& caller) {
  const std::string model = request.query_param("model").value_or("");
  if (!model.empty()) {
    if (auto refused = refuse_model(caller.key, model)) {
      return *refused;
    }
  }
  return std::shared_ptr<http::JsonSocketHandler>(
      std::make_shared<RealtimeSession>(*this, caller, model, session_id()));
}

std::optional<Error> RealtimeApi::refuse_model(const http::ApiKey* key, const std::string& model) {
  return gateway_.refuse_model(key, model);
}

Result<std::string> RealtimeApi::transcribe(const std::string& model, const http::ApiKey* key,
                                            std::string wav,
                                            const std::function<bool()>& cancelled) {
  auto audio = std::make_shared<const std::string>(std::move(wav));
  std::vector<FormField> fields = {
      FormField{"file", "realtime_audio.wav", "audio/wav", *audio, audio},
      FormField::text("model", model), FormField::text("response_format", "json"),
      FormField::text("temperature", "0.0")};
  const std::string boundary = inference::make_boundary(fields);
  const std::string body = inference::write_multipart(fields, boundary);
  inference::InferenceRequest req;
  req.route = ApiRoute::kTranscriptions;
  req.model = model;
  req.key = key;
  req.raw_body = body;
  req.content_type = "multipart/form-data; boundary=" + boundary;
  req.form = &fields;
  inference::AnswerBuffer writer(cancelled);
  gateway_.forward(req, writer);
  auto answer = nlohmann::json::parse(writer.body(), nullptr, false);
  if (writer.status() == 200) {
    if (answer.is_object() && answer.contains("text") && answer["text"].is_string()) {
      return std::string(trim_whitespace(answer["text"].get<std::string>()));
    }
    return Error(ErrorCode::kUpstreamProtocol, "the transcription answer has no 'text'");
  }
  if (answer.is_object() && answer.contains("error") && answer["error"].is_object() &&
      answer["error"].contains("message") && answer["error"]["message"].is_string()) {
    return Error(ErrorCode::kUpstreamProtocol, answer["error"]["message"].get<std::string>());
  }
  return Error(ErrorCode::kUpstreamProtocol,
               "the transcription failed with status " + std::to_string(writer.status()));
}

void RealtimeApi::run(std::function<void()> work) {
  reap();
  MutexLock lock(mu_);
  threads_.emplace_back([this, work = std::move(work)] {
    work();
    MutexLock done(mu_);
    finished_.push_back(std::this_thread::get_id());
  });
}

void RealtimeApi::reap() {
  std::vector<std::thread> done;
  {
    MutexLock lock(mu_);
    for (auto id : finished_) {
      auto it = std::find_if(threads_.begin(), threads_.end(),
                             [id](const std::thread& t) { return t.get_id() == id; });
      if (it != threads_.end()) {
        done.push_back(std::move(*it));
        threads_.erase(it);
      }
    }
    finished_.clear();
  }
  for (auto& t : done) {
    t.join();
  }
}

}  // namespace lemon::api
