// The log stream over WebSocket (`/logs/stream` with an upgrade; Lemonade
// 11's app reads its log window from it), beside the SSE stream of the same
// path. The client sends {"type":"logs.subscribe","after_seq":N|null}; the
// server answers {"type":"logs.snapshot","entries":[...]} (the kept lines
// after N, at most kSnapshotEntries, the newest), then
// {"type":"logs.entry","entry":{...}} for each line as it is logged, from
// the same ring as the SSE stream (telemetry/log_ring.h). Entries have
// Lemonade's shape, {seq, timestamp, severity, tag, line}; a subscribe with
// "format":"router" gets the SSE stream's JSON lines instead ({seq, time,
// level, source, model, text}; the dashboard's). A second subscribe starts
// over with its own snapshot.
//
// A client that reads too slowly (its socket's queue or its place in the
// ring's follower queue full) is closed with 1008; nothing it missed is
// kept for it. Read scope.
//
// Thread-safety: the route's handlers run on the WebSocket thread; the ring
// wakes them from any thread.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "lemon/http/json_socket.h"
#include "lemon/telemetry/log_ring.h"

namespace lemon::api {

inline constexpr std::size_t kSnapshotEntries = 5000;

// The route for `ring`, which outlives the server.
http::SocketRoute log_socket_route(telemetry::LogRing& ring);

// One line in Lemonade's shape: `timestamp` "YYYY-MM-DD HH:MM:SS.mmm" (local
// time), `severity` as Lemonade's logger names levels (Trace, Debug, Info,
// Warn, Error, Fatal; a backend's own output is Info), `tag` the logger or,
// for a backend's output, its model, and `line` all of it as one line.
nlohmann::json lemonade_log_entry(std::uint64_t seq, const telemetry::LogLine& line);

}  // namespace lemon::api
