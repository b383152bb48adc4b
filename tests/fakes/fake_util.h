// Small helpers shared by the fake backends: clocks, hashing, base64, files,
// deterministic "generated" text and JSON serialisation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace fake {

using json = nlohmann::json;

// CLOCK_MONOTONIC in nanoseconds (comparable across processes on one host).
int64_t mono_ns();
// Wall-clock seconds since the Unix epoch.
int64_t unix_seconds();

// 64-bit FNV-1a hash of `text`.
uint64_t fnv1a(std::string_view text);
// Standard base64 (RFC 4648, with padding).
std::string base64_encode(std::string_view bytes);

bool is_regular_file(const std::string& path);
bool is_directory(const std::string& path);
// Returns the value of environment variable `name`, or "" when unset.
std::string env_or_empty(const char* name);

// Rough token estimate for a piece of text (about four bytes per token, >= 1).
int approx_tokens(std::string_view text);
// The text of generated token `i` (a fixed, repeating sentence).
std::string token_piece(int i);
// The concatenation of token_piece(0..n-1).
std::string generated_text(int n);
// A short hexadecimal id unique within this process, e.g. "chatcmpl-1a2b...".
std::string make_id(std::string_view prefix);

// JSON text that never throws on invalid UTF-8 (replaces bad bytes).
std::string dump(const json& j);
// One server-sent event carrying `j` as its data line.
std::string sse_data(const json& j);
// One server-sent event with an explicit event type.
std::string sse_event(std::string_view type, const json& j);

}  // namespace fake
