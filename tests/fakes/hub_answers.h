// How fake-hub answers: JSON bodies and the hub's errors in its own words
// (X-Error-Code), and file bodies as the hub and its CDN send them (ETag,
// byte ranges) under the file knobs of HubControl (status, drop, corrupt,
// throttle, stall), each byte counted in the request log.
//
// Thread-safety: pure functions; serve_bytes' body is sent on httplib's
// thread of the request.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "hub_control.h"
#include "hub_files.h"

namespace fake::hub {

void reply_json(httplib::Response& res, int status, const nlohmann::json& j);
// 404 with the hub's error code ("RepoNotFound", "EntryNotFound", ...).
void not_found(httplib::Response& res, const char* code, const std::string& message);
// 401 or 403 for a gated repository, as the hub words it.
void deny(httplib::Response& res, int status, const std::string& repo);

// A whole unsigned decimal number.
bool parse_u64(std::string_view s, std::uint64_t& out);

// The bytes of `f` (with Range and the file knobs of `key`).
void serve_bytes(HubControl& control, const httplib::Request& req, httplib::Response& res,
                 const std::string& key, const FileInfo& f, const std::string& etag);

}  // namespace fake::hub
