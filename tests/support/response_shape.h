// Response shapes, for the route snapshot (tests/snapshot): a response body
// reduced to what a refactor must keep and nothing that changes from run to
// run. A JSON value becomes its structure with value types ("string",
// "number", "boolean", "null"); objects keep their keys (sorted), arrays are
// summarized by the shape of their first element ([] when empty). Only the
// values of enum-like fields are kept as they are (kLiteralKeys: an error's
// code, type and param, "object", "status", ...), after masking. Streams are
// summarized event by event (SSE) or line by line (NDJSON), a run of equal
// shapes kept once, comments dropped; Prometheus text by its metric families.
//
// Pure functions; callable from any thread.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace lemon::testing {

// Volatile text that a kept value or an object key may contain, replaced
// before it is recorded: each `literal` (a temporary folder, say) becomes its
// `placeholder`; "127.0.0.1:<port>" becomes "127.0.0.1:<port>" whatever the
// port; a key made only of digits (a pid) becomes "<number>".
// `machine_keys` name fields whose value depends on the machine or the moment
// (a GPU inventory, a CPU percentage over the last few milliseconds): their
// value is recorded as "<machine>".
struct ShapeMasks {
  std::vector<std::pair<std::string, std::string>> literals;  // {text, placeholder}
  std::vector<std::string> machine_keys;
  std::string apply(std::string text) const;
};

// Keys whose string values are recorded as they are (masked).
bool is_literal_key(std::string_view key);

// The shape of a JSON value; `key` is the name it had in its parent object.
nlohmann::json json_shape(const nlohmann::json& value, const ShapeMasks& masks,
                          std::string_view key = {});

// The events of an SSE body, each {"event": name (if any), "data": shape};
// "[DONE]" is kept, other non-JSON data is "<text>".
nlohmann::json sse_shape(std::string_view body, const ShapeMasks& masks);
// One SSE event's data (already joined) and name.
nlohmann::json sse_event_shape(std::string_view event, std::string_view data,
                               const ShapeMasks& masks);
// The lines of an NDJSON body, each a JSON shape.
nlohmann::json ndjson_shape(std::string_view body, const ShapeMasks& masks);
// Prometheus text: its "# TYPE name kind" lines, sorted.
nlohmann::json prometheus_shape(std::string_view body);

// The shape of a whole body by its Content-Type: JSON, SSE, NDJSON,
// Prometheus text, else "<text>", "<binary>" or "<empty>".
nlohmann::json body_shape(std::string_view content_type, std::string_view body,
                          const ShapeMasks& masks);

}  // namespace lemon::testing
