// The router's events (telemetry's event bus) as llama.cpp's /models/sse
// events (tools/server/server-models.cpp; where its README and its code
// differ, the code's shapes):
//
//   load_started                 model_status  {"status":"loading"}
//   backend_state loading        status_change
//   {"status":"loading","progress":{stages,current,value}} backend_state sleeping status_change
//   {"status":"sleeping"} backend_state ready (a wake) status_change {"status":"loaded"}
//   load_succeeded               status_change {"status":"loaded","info":{...}} (info when known)
//   load_failed, server_crashed  status_change {"status":"unloaded","exit_code":1}
//   server_stopped (the last)    status_change {"status":"unloaded","exit_code":0}
//   download_progress            download_progress {"progress":{"<file>":{done,total}}}
//   download_complete / _failed  download_finished / download_failed (no data)
//   model_removed                model_remove (no data)
//   models_reload                models_reload, model "*" (no data)
//
// Other events make none. Models are named as llama.cpp's clients name them.
//
// Thread-safety: a pure function of the event and what `names` answers.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lemon/telemetry/event_bus.h"

namespace lemon::api {

struct SseNames {
  // llama.cpp's name for one of the router's server names.
  std::function<std::string(const std::string& server)> id_of;
  // Whether the model still has a server (another replica) after a stop.
  std::function<bool(const std::string& server)> still_served;
  // The model's backend info from its ready report (null when none).
  std::function<nlohmann::json(const std::string& server)> info_of;
  // A download's files so far ({"<file>": {done, total}}).
  std::function<nlohmann::ordered_json(const std::string& model)> downloads_of;
};

std::vector<nlohmann::ordered_json> llamacpp_events(const telemetry::Event& event,
                                                    const SseNames& names);

}  // namespace lemon::api
