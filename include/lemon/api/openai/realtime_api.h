// RealtimeApi: the `/realtime` WebSocket (Lemonade's realtime
// transcription; realtime_session.h), under every API prefix and at the
// root, on the main port and --websocket-port's. `?model=` names the
// whisper model (also settable by session.update); the caller's key needs
// the inference scope and the model in its list. Each segment is one
// audio/transcriptions request through the InferenceGateway, so it takes
// its own lease of the model's whisper-server (auto-load, busy-ness and
// eviction as for any request) and is counted in the metrics; the WAV is
// built in memory and never touches the disk.
//
// Ownership: holds references to the gateway, which outlives it; owns the
// threads transcriptions run on and joins them when destroyed (after the
// server has stopped, which ends every session).
// Thread-safety: register_routes() once, before the server runs; the rest
// from any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lemon/api/openai/realtime_session.h"
#include "lemon/core/mutex.h"
#include "lemon/http/api_routes.h"
#include "lemon/inference/inference_gateway.h"

namespace lemon::api {

class RealtimeApi final : public RealtimeBackend {
 public:
  // The largest client message (an append of base64 audio).
  static constexpr std::size_t kMaxMessageBytes = 4u << 20;

  explicit RealtimeApi(inference::InferenceGateway& gateway);
  ~RealtimeApi() override;
  RealtimeApi(const RealtimeApi&) = delete;
  RealtimeApi& operator=(const RealtimeApi&) = delete;

  void register_routes(http::ApiRoutes& routes);

  // RealtimeBackend.
  Result<std::string> transcribe(const std::string& model, const http::ApiKey* key, std::string wav,
                                 const std::function<bool()>& cancelled) override;
  void run(std::function<void()> work) override;
  std::optional<Error> refuse_model(const http::ApiKey* key, const std::string& model) override;

 private:
  Result<std::shared_ptr<http::JsonSocketHandler>> open(const net::Request& request,
                                                        const http::SocketCaller& caller);
  void reap() LEMON_EXCLUDES(mu_);

  inference::InferenceGateway& gateway_;
  Mutex mu_;
  std::vector<std::thread> threads_ LEMON_GUARDED_BY(mu_);
  std::vector<std::thread::id> finished_ LEMON_GUARDED_BY(mu_);
};

}  // namespace lemon::api
