// The route snapshot's fixed requests (route_snapshot.cpp): what is sent, in
// which order, and what each one is for. The order matters: later requests
// see the state earlier ones left (loaded models, a session, a preset), so a
// request is only ever appended where the state it needs is there.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/raw_http.h"

namespace lemon::snapshot {

// Which listener a request goes to.
enum class Listener { kMain, kOllama };

// How the response is read.
enum class Read {
  kWhole,       // until the server closes the connection
  kFirstEvent,  // an endless SSE stream: its first data event, then hang up
  kHead,        // an endless SSE stream that may send nothing: its head, then hang up
};

struct Case {
  std::string method;
  // May hold "{session}", replaced by the id an earlier request captured;
  // recorded as written, so the snapshot shows no id.
  std::string path;
  std::string body;
  std::string content_type;  // sent when not empty
  std::string summary;       // the body as recorded (short, no volatile bytes)
  std::string note;          // what the request is for
  testing::HeaderList headers;
  Read read = Read::kWhole;
  Listener listener = Listener::kMain;
  std::string capture;  // if set: the answer's "id" is kept under this name
};

// The API prefixes every API route is served under (RouteTable).
const std::vector<std::string>& api_prefixes();

// Requests against a router with no API key, models of every type (user.a
// llm, user.e embedding, user.r reranking, user.w whisper, user.i image), the
// preset "coder" and the profile "snap"; the last one shuts it down.
std::vector<Case> open_plan();

// The extra requests of the run with API keys (kUserKey: inference and read;
// kAdminKey: every scope), besides each route asked without a key.
inline constexpr const char* kUserKey = "snapshot-user-key";
inline constexpr const char* kAdminKey = "snapshot-admin-key";
std::vector<Case> keyed_plan();

// Paths the router answers 501 for every method (ApiRoutes::not_implemented).
// GET /internal/routes does not list them, so they are listed here.
const std::vector<std::string>& not_implemented_paths();

}  // namespace lemon::snapshot
