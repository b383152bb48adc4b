// The error envelope (error_shape table, error_status, error_envelope) and the
// JSON request helpers (parse_json_object, string_field, bool_field,
// FieldReader).
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <string>

#include "lemon/core/error_envelope.h"
#include "lemon/http/error_response.h"
#include "lemon/http/json_request.h"

namespace lemon::http {
namespace {

using nlohmann::json;

// ---- the table ---------------------------------------------------------------------------

struct ShapeCase {
  ErrorCode code;
  int status;
  const char* type;
  const char* code_name;
};

class HttpApiErrorShape : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(HttpApiErrorShape, Row) {
  const ShapeCase& c = GetParam();
  ErrorShape s = error_shape(c.code);
  EXPECT_EQ(s.status, c.status) << error_code_name(c.code);
  EXPECT_STREQ(s.type, c.type) << error_code_name(c.code);
  EXPECT_STREQ(s.code, c.code_name) << error_code_name(c.code);
}

// One row for every ErrorCode (checked below).
const ShapeCase kShapes[] = {
    {ErrorCode::kModelNotFound, 404, "invalid_request_error", "model_not_found"},
    {ErrorCode::kInvalidRequest, 400, "invalid_request_error", "invalid_request_error"},
    {ErrorCode::kInvalidOption, 400, "invalid_request_error", "invalid_request_error"},
    {ErrorCode::kInvalidUserArgs, 400, "invalid_request_error", "invalid_llamacpp_args"},
    {ErrorCode::kUnsupportedOperation, 400, "invalid_request_error", "unsupported_operation"},
    {ErrorCode::kServedRemotely, 400, "invalid_request_error", "model_served_remotely"},
    {ErrorCode::kUnauthorized, 401, "authentication_error", "invalid_api_key"},
    {ErrorCode::kForbidden, 403, "permission_error", "forbidden"},
    {ErrorCode::kRateLimited, 429, "rate_limit_error", "rate_limit_exceeded"},
    {ErrorCode::kModelNotLoaded, 404, "invalid_request_error", "model_not_loaded"},
    {ErrorCode::kRouteNotFound, 404, "invalid_request_error", "not_found"},
    {ErrorCode::kMethodNotAllowed, 405, "invalid_request_error", "method_not_allowed"},
    {ErrorCode::kPayloadTooLarge, 413, "invalid_request_error", "payload_too_large"},
    {ErrorCode::kUnsupportedMediaType, 415, "invalid_request_error", "unsupported_media_type"},
    {ErrorCode::kRequestTimeout, 408, "invalid_request_error", "request_timeout"},
    {ErrorCode::kUriTooLong, 414, "invalid_request_error", "uri_too_long"},
    {ErrorCode::kHeadersTooLarge, 431, "invalid_request_error", "headers_too_large"},
    {ErrorCode::kNotImplemented, 501, "server_error", "not_implemented"},
    {ErrorCode::kVersionNotSupported, 505, "server_error", "http_version_not_supported"},
    {ErrorCode::kUpgradeRequired, 426, "invalid_request_error", "upgrade_required"},
    {ErrorCode::kModelFilesMissing, 404, "invalid_request_error", "model_not_downloaded"},
    {ErrorCode::kBackendExited, 500, "server_error", "model_load_error"},
    {ErrorCode::kBackendStartTimeout, 500, "server_error", "model_load_error"},
    {ErrorCode::kBackendLoadStalled, 500, "server_error", "model_load_error"},
    {ErrorCode::kBackendBinaryMissing, 500, "server_error", "model_load_error"},
    {ErrorCode::kUnknownRecipe, 500, "server_error", "model_load_error"},
    {ErrorCode::kSpawnFailed, 500, "server_error", "model_load_error"},
    {ErrorCode::kBackendUnavailable, 503, "server_error", "backend_unavailable"},
    {ErrorCode::kBackendCrashed, 503, "server_error", "backend_unavailable"},
    {ErrorCode::kShuttingDown, 503, "server_error", "backend_unavailable"},
    {ErrorCode::kQueueFull, 503, "server_error", "queue_full"},
    {ErrorCode::kDraining, 503, "server_error", "shutting_down"},
    {ErrorCode::kServerBusy, 503, "server_error", "server_busy"},
    {ErrorCode::kUpstreamProtocol, 502, "server_error", "bad_gateway"},
    {ErrorCode::kGatewayTimeout, 504, "server_error", "gateway_timeout"},
    {ErrorCode::kCancelled, 499, "invalid_request_error", "client_closed_request"},
    {ErrorCode::kConflict, 409, "invalid_request_error", "conflict"},
    {ErrorCode::kSlotsPinned, 409, "invalid_request_error", "slots_pinned_error"},
    {ErrorCode::kRemoteNotFound, 404, "invalid_request_error", "remote_not_found"},
    {ErrorCode::kRemoteUnauthorized, 401, "authentication_error", "remote_unauthorized"},
    {ErrorCode::kRemoteForbidden, 403, "permission_error", "remote_forbidden"},
    {ErrorCode::kNetworkError, 502, "server_error", "network_error"},
    {ErrorCode::kChecksumMismatch, 502, "server_error", "checksum_mismatch"},
    {ErrorCode::kInsufficientStorage, 507, "server_error", "insufficient_storage"},
    {ErrorCode::kInsufficientMemory, 507, "server_error", "insufficient_memory"},
    {ErrorCode::kOutOfMemory, 507, "server_error", "out_of_memory"},
    {ErrorCode::kSessionNotFound, 404, "invalid_request_error", "session_not_found"},
    {ErrorCode::kSessionBusy, 409, "invalid_request_error", "session_busy"},
    {ErrorCode::kSessionLost, 409, "invalid_request_error", "session_lost"},
    {ErrorCode::kPromptTooLong, 400, "invalid_request_error", "prompt_too_long"},
    {ErrorCode::kConfigFileInvalid, 409, "invalid_request_error", "config_file_invalid"},
    {ErrorCode::kStorageReadOnly, 409, "invalid_request_error", "storage_read_only"},
    {ErrorCode::kConfigNotSaved, 409, "invalid_request_error", "config_not_saved"},
    {ErrorCode::kReservedModelName, 400, "invalid_request_error", "reserved_model_name"},
    {ErrorCode::kInvalidAlias, 400, "invalid_request_error", "invalid_alias"},
    {ErrorCode::kAliasConflict, 409, "invalid_request_error", "alias_conflict"},
    {ErrorCode::kAliasNotFound, 404, "invalid_request_error", "alias_not_found"},
    {ErrorCode::kModelInUse, 409, "invalid_request_error", "model_in_use"},
    {ErrorCode::kInvalidRoutingPolicy, 400, "invalid_request_error", "invalid_routing_policy"},
    {ErrorCode::kOffline, 404, "invalid_request_error", "offline"},
    {ErrorCode::kInvalidArchive, 502, "server_error", "invalid_archive"},
    {ErrorCode::kInternal, 500, "server_error", "internal_error"},
};

INSTANTIATE_TEST_SUITE_P(Table, HttpApiErrorShape, ::testing::ValuesIn(kShapes),
                         [](const ::testing::TestParamInfo<ShapeCase>& p) {
                           return std::string(error_code_name(p.param.code));
                         });

TEST(HttpApiErrorTable, EveryCodeHasExactlyOneRow) {
  for (ErrorCode c : kAllErrorCodes) {
    auto rows = std::count_if(std::begin(kShapes), std::end(kShapes),
                              [c](const ShapeCase& row) { return row.code == c; });
    EXPECT_EQ(rows, 1) << error_code_name(c);
  }
}

TEST(HttpApiErrorTable, EveryCodeHasAStatusTypeAndCode) {
  for (ErrorCode c : kAllErrorCodes) {
    ErrorShape s = error_shape(c);
    EXPECT_GE(s.status, 400) << error_code_name(c);
    EXPECT_LT(s.status, 600) << error_code_name(c);
    ASSERT_NE(s.type, nullptr);
    ASSERT_NE(s.code, nullptr);
    EXPECT_STRNE(s.type, "") << error_code_name(c);
    EXPECT_STRNE(s.code, "") << error_code_name(c);
    // Client errors are invalid_request_error-ish, server errors server_error.
    if (s.status >= 500) {
      EXPECT_STREQ(s.type, "server_error") << error_code_name(c);
    }
  }
}

// ---- error_status ----------------------------------------------------------------------------

TEST(HttpApiErrorStatus, PrefersTheUpstreamStatus) {
  EXPECT_EQ(error_status(Error(ErrorCode::kBackendUnavailable, "x").with_upstream_status(429)),
            429);
  EXPECT_EQ(error_status(Error(ErrorCode::kInvalidRequest, "x").with_upstream_status(422)), 422);
  EXPECT_EQ(error_status(Error(ErrorCode::kInternal, "x").with_upstream_status(501)), 501);
}

TEST(HttpApiErrorStatus, FallsBackToTheTable) {
  EXPECT_EQ(error_status(Error(ErrorCode::kModelNotFound, "x")), 404);
  EXPECT_EQ(error_status(Error(ErrorCode::kPayloadTooLarge, "x")), 413);
  // An upstream status that is not an error status is not used.
  EXPECT_EQ(error_status(Error(ErrorCode::kUpstreamProtocol, "x").with_upstream_status(200)), 502);
  EXPECT_EQ(error_status(Error(ErrorCode::kUpstreamProtocol, "x").with_upstream_status(600)), 502);
  EXPECT_EQ(error_status(Error(ErrorCode::kUpstreamProtocol, "x").with_upstream_status(0)), 502);
}

// ---- error_type_for_status ------------------------------------------------------------------

TEST(HttpApiErrorTypeForStatus, ServerErrorFrom500Up) {
  EXPECT_STREQ(error_type_for_status(400), "invalid_request_error");
  EXPECT_STREQ(error_type_for_status(499), "invalid_request_error");
  EXPECT_STREQ(error_type_for_status(500), "server_error");
  EXPECT_STREQ(error_type_for_status(503), "server_error");
}

// ---- error_envelope
// ------------------------------------------------------------------------------

json error_body(const Error& e) {
  return json::parse(error_envelope(e));
}

TEST(HttpApiErrorBody, KeysComeInTheDocumentedOrder) {
  EXPECT_EQ(error_envelope(Error(ErrorCode::kModelNotFound, "no 'x'", "model")),
            R"({"error":{"message":"no 'x'","type":"invalid_request_error","param":"model",)"
            R"("code":"model_not_found"}})");
}

TEST(HttpApiErrorBody, InvalidUtf8InTheMessageIsReplacedNotThrown) {
  json j = error_body(Error(ErrorCode::kInvalidRequest, "bad \xff byte"));
  EXPECT_EQ(j["error"]["message"], "bad \xEF\xBF\xBD byte");
}

TEST(HttpApiErrorBody, HasExactlyMessageTypeParamCode) {
  json j = error_body(Error(ErrorCode::kModelNotFound, "model 'x' not found", "model"));
  ASSERT_EQ(j.size(), 1u) << j.dump();
  const json& e = j.at("error");
  ASSERT_EQ(e.size(), 4u) << e.dump();
  EXPECT_EQ(e.at("message"), "model 'x' not found");
  EXPECT_EQ(e.at("type"), "invalid_request_error");
  EXPECT_EQ(e.at("param"), "model");
  EXPECT_EQ(e.at("code"), "model_not_found");
}

TEST(HttpApiErrorBody, EmptyParamIsNull) {
  json j = error_body(Error(ErrorCode::kInternal, "oops"));
  ASSERT_TRUE(j["error"].contains("param"));
  EXPECT_TRUE(j["error"]["param"].is_null());
}

TEST(HttpApiErrorBody, DetailFollowsTheMessageAfterABlankLine) {
  json j = error_body(Error(ErrorCode::kBackendExited, "llama-server exited (exit code 1)")
                          .with_detail("line 1\nline 2\n"));
  EXPECT_EQ(j["error"]["message"], "llama-server exited (exit code 1)\n\nline 1\nline 2\n");
  EXPECT_EQ(j["error"]["code"], "model_load_error");
}

TEST(HttpApiErrorBody, UpstreamStatusDoesNotChangeTheShape) {
  json j = error_body(Error(ErrorCode::kBackendUnavailable, "busy").with_upstream_status(429));
  EXPECT_EQ(j["error"]["type"], "server_error");
  EXPECT_EQ(j["error"]["code"], "backend_unavailable");
}

TEST(HttpApiErrorBody, JsonHeaders) {
  net::Headers h = json_headers();
  ASSERT_TRUE(h.get("content-type").has_value());
  EXPECT_EQ(*h.get("Content-Type"), "application/json");
}

// ---- parse_json_object
// ---------------------------------------------------------------------------

TEST(HttpApiJsonRequest, ParsesAnObject) {
  auto r = parse_json_object(R"({"model":"m","n":2})");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)["model"], "m");
  EXPECT_EQ((*r)["n"], 2);
}

TEST(HttpApiJsonRequest, BadJsonNamesTheParseError) {
  auto r = parse_json_object(R"({"model": )");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidRequest);
  EXPECT_NE(r.error().message().find("not valid JSON"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("parse error"), std::string::npos) << r.error().message();
}

TEST(HttpApiJsonRequest, ANumberTooLargeForADoubleIsInvalidNotAnException) {
  // nlohmann throws out_of_range, not parse_error, for this (fuzz_json_requests).
  auto r = parse_json_object(R"({"model":"m","temperature":1e999})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidRequest);
  EXPECT_NE(r.error().message().find("not valid JSON"), std::string::npos) << r.error().message();
}

TEST(HttpApiJsonRequest, EmptyBodyIsInvalid) {
  auto r = parse_json_object("");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidRequest);
}

TEST(HttpApiJsonRequest, NonObjectsAreRefused) {
  for (const char* body : {"[1,2]", "\"text\"", "42", "null", "true"}) {
    auto r = parse_json_object(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidRequest) << body;
    EXPECT_NE(r.error().message().find("object"), std::string::npos) << r.error().message();
  }
}

std::string nested(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) {
    s += "{\"a\":";
  }
  s += "1";
  for (int i = 0; i < depth; ++i) {
    s += "}";
  }
  return s;
}

TEST(HttpApiJsonRequest, Depth256IsAccepted) {
  auto r = parse_json_object(nested(256));
  EXPECT_TRUE(r.ok()) << r.error().message();
}

TEST(HttpApiJsonRequest, DepthOver256IsRefused) {
  auto r = parse_json_object(nested(257));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidRequest);
  EXPECT_NE(r.error().message().find("256"), std::string::npos) << r.error().message();
  // A deep array inside an object counts too, and no stack is spent on it.
  std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  auto d = parse_json_object(deep);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code(), ErrorCode::kInvalidRequest);
}

TEST(HttpApiJsonRequest, BracketsInsideStringsDoNotCount) {
  std::string body =
      "{\"content\":\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"}";
  auto r = parse_json_object(body);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)["content"].get<std::string>().size(), 2001u);
}

// ---- string_field / bool_field ---------------------------------------------------------------

TEST(HttpApiJsonRequest, StringFieldRequired) {
  json body = {{"model", "m"}, {"n", 3}, {"empty", ""}, {"nothing", nullptr}};
  auto ok = string_field(body, "model", true);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, "m");

  for (const char* name : {"absent", "nothing", "n", "empty"}) {
    auto r = string_field(body, name, true);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidRequest) << name;
    EXPECT_EQ(r.error().param(), name);
    EXPECT_NE(r.error().message().find(std::string("'") + name + "'"), std::string::npos)
        << r.error().message();
  }
}

TEST(HttpApiJsonRequest, StringFieldOptional) {
  json body = {{"s", "v"}, {"n", 3}, {"empty", ""}, {"nothing", nullptr}};
  EXPECT_EQ(*string_field(body, "absent", false), "");
  EXPECT_EQ(*string_field(body, "nothing", false), "");
  EXPECT_EQ(*string_field(body, "empty", false), "");
  EXPECT_EQ(*string_field(body, "s", false), "v");
  auto wrong = string_field(body, "n", false);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().param(), "n");
}

TEST(HttpApiJsonRequest, BoolField) {
  json body = {{"stream", true}, {"off", false}, {"nothing", nullptr}, {"text", "yes"}, {"one", 1}};
  EXPECT_EQ(*bool_field(body, "stream", false), true);
  EXPECT_EQ(*bool_field(body, "off", true), false);
  EXPECT_EQ(*bool_field(body, "absent", true), true);
  EXPECT_EQ(*bool_field(body, "absent", false), false);
  EXPECT_EQ(*bool_field(body, "nothing", true), true);
  for (const char* name : {"text", "one"}) {
    auto r = bool_field(body, name, false);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidRequest);
    EXPECT_EQ(r.error().param(), name);
    EXPECT_NE(r.error().message().find("boolean"), std::string::npos) << r.error().message();
  }
}

TEST(HttpApiJsonRequest, FieldReaderKeepsTheFirstBadFieldAndReadsOnWithFallbacks) {
  const json good = {{"model", "m"}, {"stream", true}};
  FieldReader ok_reader(good);
  EXPECT_EQ(ok_reader.string("model", true), "m");
  EXPECT_TRUE(ok_reader.boolean("stream", false));
  EXPECT_EQ(ok_reader.string("absent"), "");
  EXPECT_TRUE(ok_reader.status().ok());

  const json bad = {{"model", 3}, {"stream", "yes"}, {"name", "n"}};
  FieldReader in(bad);
  EXPECT_EQ(in.string("model", true), "");
  EXPECT_TRUE(in.boolean("stream", true)) << "the fallback after a failure";
  EXPECT_EQ(in.string("name"), "n") << "a good field still reads";
  EXPECT_EQ(in.take(Result<int>(Error(ErrorCode::kInvalidRequest, "later", "later")), 7), 7);
  ASSERT_FALSE(in.status().ok());
  EXPECT_EQ(in.status().error().param(), "model") << "the first failure is kept";
}

}  // namespace
}  // namespace lemon::http
