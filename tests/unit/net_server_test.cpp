// Server request parsing and protocol behaviour, driven by a raw
// socket client so the exact bytes on the wire are visible.
#include "lemon/net/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstring>
#include <ctime>
#include <string>

#include "support/raw_client.h"
#include "support/running_server.h"

namespace lemon::net {
namespace {

using testing::RawClient;
using testing::RunningServer;

// Echoes method, path, query and body.
void echo(Request& req, ResponseWriter& w) {
  nlohmann::json j = {{"method", req.method}, {"path", req.path},     {"query", req.query},
                      {"body", req.body},     {"target", req.target}, {"remote", req.remote_addr}};
  w.send(200, Headers{{"Content-Type", "application/json"}}, j.dump());
}

nlohmann::json json_of(const std::string& body) {
  return nlohmann::json::parse(body);
}

void expect_envelope(const RawClient::Response& r, int status, const std::string& code) {
  EXPECT_EQ(r.status, status) << r.head;
  EXPECT_EQ(RawClient::header(r.head, "content-type"), "application/json");
  auto j = json_of(r.body);
  EXPECT_EQ(j["error"]["code"], code);
  EXPECT_EQ(j["error"]["type"], status >= 500 ? "server_error" : "invalid_request_error");
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
}

TEST(HttpServer, FillsRequestFields) {
  RunningServer s({}, [](Request& req, ResponseWriter& w) {
    EXPECT_EQ(*req.headers.get("x-custom"), "v 1");
    echo(req, w);
  });
  RawClient c(s.port());
  ASSERT_TRUE(c.connected());
  c.send("GET /api/v1/a%20b?show_all=true&x=%41 HTTP/1.1\r\nHost: x\r\nX-Custom:  v 1 \r\n\r\n");
  auto r = c.read_response();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(RawClient::header(r.head, "server"), "lemonade-router");
  EXPECT_EQ(RawClient::header(r.head, "content-length"), std::to_string(r.body.size()));
  EXPECT_EQ(RawClient::header(r.head, "connection"), "");
  auto j = json_of(r.body);
  EXPECT_EQ(j["method"], "GET");
  EXPECT_EQ(j["path"], "/api/v1/a b");
  EXPECT_EQ(j["query"], "show_all=true&x=%41");
  EXPECT_EQ(j["target"], "/api/v1/a%20b?show_all=true&x=%41");
  EXPECT_EQ(j["remote"], "127.0.0.1");
}

TEST(HttpServer, ContentLengthBody) {
  RunningServer s({}, echo);
  RawClient c(s.port());
  c.send("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello");
  c.send(" world");
  auto r = c.read_response();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json_of(r.body)["body"], "hello world");
}

TEST(HttpServer, ChunkedRequestBodyWithExtensionsAndTrailers) {
  RunningServer s({}, echo);
  RawClient c(s.port());
  c.send("POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;name=v\r\nhello\r\n");
  c.send("6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n");
  auto r = c.read_response();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json_of(r.body)["body"], "hello world");
  // The connection stays usable after the trailer.
  c.send("GET /next HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(json_of(c.read_response().body)["path"], "/next");
}

TEST(HttpServer, ExpectContinueIsAnsweredBeforeTheBody) {
  RunningServer s({}, echo);
  RawClient c(s.port());
  c.send("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(c.read_until("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  c.send("data");
  auto r = c.read_response();
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json_of(r.body)["body"], "data");
}

TEST(HttpServer, ExpectContinueWithTooLargeBodyGets413AtOnce) {
  ServerOptions o;
  o.max_body_bytes = 100;
  RunningServer s(o, echo);
  RawClient c(s.port());
  c.send("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 101\r\nExpect: 100-continue\r\n\r\n");
  auto r = c.read_response();
  expect_envelope(r, 413, "payload_too_large");
  EXPECT_EQ(RawClient::header(r.head, "connection"), "close");
  EXPECT_TRUE(c.read_to_eof());
}

TEST(HttpServer, LargeContentLengthGets413WithoutReadingTheBody) {
  ServerOptions o;
  o.max_body_bytes = 1024;
  RunningServer s(o, [](Request&, ResponseWriter&) { ADD_FAILURE() << "handler called"; });
  RawClient c(s.port());
  // Nothing of the 10 MB body is sent: the answer must not wait for it.
  c.send("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000\r\n\r\npart");
  auto r = c.read_response();
  expect_envelope(r, 413, "payload_too_large");
  EXPECT_EQ(r.body,
            "{\"error\":{\"message\":\"request body exceeds the limit of 1024 bytes\","
            "\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"payload_too_large\"}}");
  EXPECT_TRUE(c.read_to_eof());
}

TEST(HttpServer, OversizedChunkedBodyGets413Early) {
  ServerOptions o;
  o.max_body_bytes = 100;
  RunningServer s(o, [](Request&, ResponseWriter&) { ADD_FAILURE() << "handler called"; });
  RawClient c(s.port());
  // 60 bytes fit; the next chunk announces 0x30 = 48 more, whose data never comes.
  c.send("POST /x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3c\r\n" +
         std::string(60, 'a') + "\r\n30\r\n");
  auto r = c.read_response();
  expect_envelope(r, 413, "payload_too_large");
  EXPECT_TRUE(c.read_to_eof());
}

TEST(HttpServer, BodyAtTheLimitIsAccepted) {
  ServerOptions o;
  o.max_body_bytes = 100;
  RunningServer s(o, echo);
  RawClient c(s.port());
  c.send("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'z'));
  EXPECT_EQ(c.read_response().status, 200);
}

TEST(HttpServer, HugeHeadersGet431) {
  ServerOptions o;
  o.max_header_bytes = 1024;
  RunningServer s(o, echo);
  RawClient c(s.port());
  c.send("GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(2000, 'h') + "\r\n\r\n");
  expect_envelope(c.read_response(), 431, "headers_too_large");
  EXPECT_TRUE(c.read_to_eof());
}

TEST(HttpServer, HugeHeadersGet431EvenWhenNeverTerminated) {
  ServerOptions o;
  o.max_header_bytes = 1024;
  RunningServer s(o, echo);
  RawClient c(s.port());
  c.send("GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(4000, 'h'));
  expect_envelope(c.read_response(), 431, "headers_too_large");
}

TEST(HttpServer, LongTargetGets414) {
  RunningServer s({}, echo);
  RawClient c(s.port());
  c.send("GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: t\r\n\r\n");
  expect_envelope(c.read_response(), 414, "uri_too_long");
  RawClient c2(s.port());
  c2.send("GET /" + std::string(20000, 'a'));  // no line end yet
  expect_envelope(c2.read_response(), 414, "uri_too_long");
}

TEST(HttpServer, MalformedRequestsGet400AndClose) {
  RunningServer s({}, [](Request&, ResponseWriter&) { ADD_FAILURE() << "handler called"; });
  const char* bad[] = {
      "GARBAGE\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
      "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: t\r\nX: a\r\n folded\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
  };
  for (const char* text : bad) {
    RawClient c(s.port());
    c.send(text);
    auto r = c.read_response();
    expect_envelope(r, 400, "invalid_request_error");
    EXPECT_TRUE(c.read_to_eof()) << text;
  }
}

TEST(HttpServer, PipelinedRequestsAreAnsweredInOrder) {
  RunningServer s({}, echo);
  RawClient c(s.port());
  c.send(
      "GET /one HTTP/1.1\r\nHost: t\r\n\r\n"
      "POST /two HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc"
      "POST /three HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n"
      "GET /four HTTP/1.1\r\nHost: t\r\n\r\n");
  auto r1 = c.read_response();
  auto r2 = c.read_response();
  auto r3 = c.read_response();
  auto r4 = c.read_response();
  EXPECT_EQ(json_of(r1.body)["path"], "/one");
  EXPECT_EQ(json_of(r2.body)["path"], "/two");
  EXPECT_EQ(json_of(r2.body)["body"], "abc");
  EXPECT_EQ(json_of(r3.body)["path"], "/three");
  EXPECT_EQ(json_of(r3.body)["body"], "x");
  EXPECT_EQ(json_of(r4.body)["path"], "/four");
}

TEST(HttpServer, Http10ClosesUnlessKeepAliveRequested) {
  RunningServer s({}, echo);
  {
    RawClient c(s.port());
    c.send("GET /a HTTP/1.0\r\n\r\n");
    auto r = c.read_response();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(RawClient::header(r.head, "connection"), "close");
    EXPECT_TRUE(c.read_to_eof());
  }
  {
    RawClient c(s.port());
    c.send("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    auto r = c.read_response();
    EXPECT_EQ(RawClient::header(r.head, "connection"), "keep-alive");
    c.send("GET /b HTTP/1.0\r\n\r\n");
    EXPECT_EQ(json_of(c.read_response().body)["path"], "/b");
    EXPECT_TRUE(c.read_to_eof());
  }
}

TEST(HttpServer, ConnectionCloseIsHonoured) {
  RunningServer s({}, echo);
  RawClient c(s.port());
  c.send("GET /a HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  auto r = c.read_response();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(RawClient::header(r.head, "connection"), "close");
  EXPECT_TRUE(c.read_to_eof());
}

TEST(HttpServer, HeadHasNoBody) {
  RunningServer s({}, [](Request& req, ResponseWriter& w) {
    w.send(200, Headers{{"Content-Type", "text/plain"}}, req.method == "HEAD" ? "hello" : "x");
  });
  RawClient c(s.port());
  c.send("HEAD / HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n");
  auto head = c.read_response(/*head_request=*/true);
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(RawClient::header(head.head, "content-length"), "5");
  // The next bytes are the GET response, not a body for the HEAD.
  auto get = c.read_response();
  EXPECT_EQ(get.status, 200);
  EXPECT_EQ(get.body, "x");
}

TEST(HttpServer, HandlerExceptionGets500Envelope) {
  RunningServer s({}, [](Request& req, ResponseWriter&) {
    if (req.path == "/throw") {
      throw std::runtime_error("boom");
    }
  });
  RawClient c(s.port());
  c.send("GET /throw HTTP/1.1\r\nHost: t\r\n\r\n");
  expect_envelope(c.read_response(), 500, "internal_error");
  c.send("GET /silent HTTP/1.1\r\nHost: t\r\n\r\n");
  expect_envelope(c.read_response(), 500, "internal_error");
}

TEST(HttpServer, ExceptionAfterHeadersClosesTheConnection) {
  RunningServer s({}, [](Request&, ResponseWriter& w) {
    w.begin_chunked(200, {});
    w.write_chunk("partial");
    throw std::runtime_error("boom");
  });
  RawClient c(s.port());
  c.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  std::string all;
  EXPECT_TRUE(c.read_to_eof(&all));
  EXPECT_NE(all.find("7\r\npartial\r\n"), std::string::npos);
  EXPECT_EQ(all.find("0\r\n\r\n"), std::string::npos);
}

TEST(HttpServer, ResponseHeadersAreFramedByTheServer) {
  RunningServer s({}, [](Request&, ResponseWriter& w) {
    // Framing headers from the handler are replaced; others pass through.
    w.send(201, Headers{{"Content-Length", "999"}, {"X-Id", "7"}, {"Server", "custom"}}, "abc");
  });
  RawClient c(s.port());
  c.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  auto r = c.read_response();
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.head.rfind("HTTP/1.1 201 Created\r\n", 0), 0u);
  EXPECT_EQ(RawClient::header(r.head, "content-length"), "3");
  EXPECT_EQ(RawClient::header(r.head, "x-id"), "7");
  EXPECT_EQ(RawClient::header(r.head, "server"), "custom");
  EXPECT_EQ(r.body, "abc");
}

TEST(HttpServer, EveryResponseIsDated) {
  // RFC 9110 6.6.1: an origin server with a clock sends Date, in IMF-fixdate.
  RunningServer s({}, [](Request& req, ResponseWriter& w) {
    if (req.path == "/dated") {
      w.send(200, Headers{{"Date", "Sun, 06 Nov 1994 08:49:37 GMT"}}, "kept");
      return;
    }
    w.send(200, Headers{}, "ok");
  });
  RawClient c(s.port());
  c.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  auto r = c.read_response();
  const std::string date = RawClient::header(r.head, "date");
  ASSERT_EQ(date.size(), 29u) << r.head;
  std::tm tm{};
  const char* end = strptime(date.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  ASSERT_NE(end, nullptr) << date;
  EXPECT_EQ(*end, '\0') << date;
  const auto sent = std::chrono::system_clock::from_time_t(timegm(&tm));
  const auto skew = std::chrono::system_clock::now() - sent;
  EXPECT_LT(std::chrono::abs(skew), std::chrono::seconds(5)) << date;
  // A Date the handler sets is the only one.
  c.send("GET /dated HTTP/1.1\r\nHost: t\r\n\r\n");
  auto dated = c.read_response();
  EXPECT_EQ(RawClient::header(dated.head, "date"), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(dated.head.find("Date:"), dated.head.rfind("Date:")) << dated.head;
  // Refusals are dated too.
  RawClient bad(s.port());
  bad.send("GARBAGE\r\n\r\n");
  auto refused = bad.read_response();
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(RawClient::header(refused.head, "date").size(), 29u) << refused.head;
}

TEST(HttpServer, IdleAndHalfReadConnectionsTimeOut) {
  ServerOptions o;
  o.keep_alive_timeout = std::chrono::seconds(1);
  o.header_timeout = std::chrono::seconds(1);
  RunningServer s(o, echo);
  RawClient idle(s.port());
  RawClient partial(s.port());
  partial.send("GET / HTTP/1.1\r\nHost: x\r\n");
  // read_to_eof's own guard (10 s) is far past both timeouts.
  EXPECT_TRUE(idle.read_to_eof());
  EXPECT_TRUE(partial.read_to_eof());
}

TEST(HttpServer, BindRejectsSecondCallAndReportsErrors) {
  Server a({}, echo);
  auto port = a.bind("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  EXPECT_FALSE(a.bind("127.0.0.1", 0).ok());
  Server b({}, echo);
  auto clash = b.bind("127.0.0.1", *port);
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.error().message().find(std::to_string(*port)), std::string::npos);
}

}  // namespace
}  // namespace lemon::net
