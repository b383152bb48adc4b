// What the API rooms (src/api/*) use from the http layer, by their short
// names in namespace lemon::api: routes and their access, JSON bodies and
// their fields, and the answers (JSON, the error envelope). Every room's .cpp
// includes this one header instead of naming each helper again.
#pragma once

#include "lemon/http/api_routes.h"
#include "lemon/http/error_response.h"
#include "lemon/http/json_request.h"
#include "lemon/http/request_fields.h"

namespace lemon::api {

using http::bad_field;
using http::bool_field;
using http::FieldReader;
using http::indexed;
using http::json_headers;
using http::json_text;
using http::parse_json_object;
using http::parse_model_request;
using http::RouteAccess;
using http::Scope;
using http::send_json;
using http::string_field;
using http::unknown_key;
using http::write_error;
using http::wrote_error;

}  // namespace lemon::api
