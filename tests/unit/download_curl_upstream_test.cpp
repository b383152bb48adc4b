// CurlUpstreamClient (issue #30 §3) against cpp-httplib servers: plain HTTP,
// and HTTPS with a self-signed certificate made at test time.
#include "lemon/download/curl_upstream.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_OPENSSL_SUPPORT
#endif
#include <httplib.h>

#include "support/gate.h"
#include "support/loopback_listener.h"
#include "support/self_signed.h"
#include "support/temp_dir.h"

namespace lemon::download {
// Named, not anonymous: unity builds compile several test files together.
namespace curl_upstream_test {

using lemon::testing::Gate;
using namespace std::chrono_literals;

using lemon::testing::SelfSigned;

// An httplib server on 127.0.0.1, serving on its own thread; it counts the
// requests it routes.
class TestServer {
 public:
  TestServer() : server_(std::make_unique<httplib::Server>()) {}
  explicit TestServer(const SelfSigned& tls)
      : server_(std::make_unique<httplib::SSLServer>(tls.cert, tls.key)) {}
  ~TestServer() {
    release.open();
    server_->stop();
    if (thread_.joinable()) {
      thread_.join();
    }
  }

  httplib::Server& routes() { return *server_; }

  // Starts serving, on `port` when it is not 0 (httplib's listeners share a
  // port: SO_REUSEPORT); false when the server cannot.
  bool start(int port = 0) {
    if (!server_->is_valid()) {
      return false;
    }
    server_->set_pre_routing_handler([this](const httplib::Request&, httplib::Response&) {
      ++hits;
      return httplib::Server::HandlerResponse::Unhandled;
    });
    if (port != 0) {
      port_ = server_->bind_to_port("127.0.0.1", port) ? port : 0;
    } else {
      port_ = server_->bind_to_any_port("127.0.0.1");
    }
    if (port_ <= 0) {
      return false;
    }
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    // stop() is a no-op until the accept loop runs (not pacing: a readiness wait).
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!server_->is_running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
    }
    return server_->is_running();
  }

  int port() const { return port_; }

  std::string url(const std::string& scheme = "http") const {
    return scheme + "://127.0.0.1:" + std::to_string(port_);
  }

  std::atomic<int> hits{0};
  Gate release;  // opened when the test ends, for handlers that hold a request

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

// One connection on a raw loopback socket: reads a request head, writes
// `reply` as given, then closes, resets or holds the connection until the
// test ends.
class ScriptedBackend {
 public:
  enum class Then { kClose, kReset, kHold };
  ScriptedBackend(std::string reply, Then then) : reply_(std::move(reply)), then_(then) {
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedBackend() {
    release_.open();
    ::shutdown(listener_.fd(), SHUT_RDWR);  // ends a pending accept()
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(listener_.port()); }

 private:
  void serve() {
    const int fd = ::accept(listener_.fd(), nullptr, nullptr);
    if (fd < 0) {
      return;
    }
    std::string head;
    char buf[4096];
    while (head.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) {
        break;
      }
      head.append(buf, static_cast<std::size_t>(n));
    }
    if (!reply_.empty()) {
      [[maybe_unused]] ssize_t sent = ::send(fd, reply_.data(), reply_.size(), MSG_NOSIGNAL);
    }
    if (then_ == Then::kReset) {
      linger hard{1, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    } else if (then_ == Then::kHold) {
      release_.wait(30s);
    }
    ::close(fd);
  }

  lemon::testing::LoopbackListener listener_;
  std::string reply_;
  Then then_;
  Gate release_;
  std::thread thread_;
};

// A certificate made now, and a CA file that trusts it.
struct TrustedCertificate {
  SelfSigned tls;
  lemon::testing::TempDir dir{"lemon-curl-upstream"};
  std::string ca = (dir.path() / "ca.pem").string();
  bool ok = tls.ok && tls.write_pem(ca);
};

net::UpstreamRequest get(const std::string& path) {
  net::UpstreamRequest r;
  r.method = "GET";
  r.path = path;
  return r;
}

net::CallOptions quick() {
  net::CallOptions o;
  o.connect_timeout = 5s;
  o.total_timeout = 30s;  // a hang fails the test instead of blocking it
  return o;
}

// Streams `request`, collecting the body.
Status stream_into(CurlUpstreamClient& client, const net::UpstreamRequest& request,
                   const net::CallOptions& options, std::string& body) {
  return client.stream(
      request, options, [](const net::UpstreamHead&) { return true; },
      [&body](std::string_view piece) {
        body.append(piece);
        return true;
      });
}

TEST(CurlUpstreamClient, PlainHttpSendGetsStatusBodyAndHeaders) {
  std::mutex mu;
  std::string seen_type, seen_extra, seen_accept;
  TestServer server;
  server.routes().Post("/echo", [&](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(mu);
      seen_type = req.get_header_value("Content-Type");
      seen_extra = req.get_header_value("X-Extra");
      seen_accept = req.get_header_value("Accept");
    }
    res.status = 201;
    res.set_header("X-Test", "yes");
    res.set_content("got:" + req.body, "text/plain");
  });
  ASSERT_TRUE(server.start());
  CurlUpstreamClient client({server.url() + "/", "", ""});  // a trailing slash is dropped
  net::UpstreamRequest request;
  request.path = "/echo";
  request.content_type = "application/json";
  request.body = R"({"a":1})";
  request.headers.add("X-Extra", "1");
  auto response = client.send(request, quick());
  ASSERT_TRUE(response.ok()) << response.error().message();
  EXPECT_EQ(response->status, 201);
  EXPECT_EQ(response->body, R"(got:{"a":1})");
  EXPECT_EQ(response->headers.get("x-test").value_or(""), "yes");
  EXPECT_EQ(response->headers.get("Content-Type").value_or(""), "text/plain");
  std::lock_guard lock(mu);
  EXPECT_EQ(seen_type, "application/json");
  EXPECT_EQ(seen_extra, "1");
  EXPECT_EQ(seen_accept, "");  // nothing libcurl adds on its own
}

TEST(CurlUpstreamClient, StreamDeliversEachPieceAsItArrives) {
  Gate got_one, got_two;  // outlive the server's threads
  TestServer server;
  server.routes().Get("/pieces", [&](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/event-stream",
                                     [&](std::size_t, httplib::DataSink& sink) {
                                       // The next piece is written only once the client has the
                                       // previous one: the client cannot be buffering the body.
                                       sink.write("one,", 4);
                                       if (!got_one.wait(10s)) {
                                         return false;
                                       }
                                       sink.write("two,", 4);
                                       if (!got_two.wait(10s)) {
                                         return false;
                                       }
                                       sink.write("three", 5);
                                       sink.done();
                                       return true;
                                     });
  });
  ASSERT_TRUE(server.start());
  CurlUpstreamClient client({server.url(), "", ""});
  std::vector<std::string> events;
  std::string body;
  auto status = client.stream(
      get("/pieces"), quick(),
      [&](const net::UpstreamHead& head) {
        events.push_back("head " + std::to_string(head.status) + " " +
                         std::string(head.headers.get("Content-Type").value_or("")));
        return true;
      },
      [&](std::string_view piece) {
        body.append(piece);
        if (body == "one,") {
          got_one.open();
        } else if (body == "one,two,") {
          got_two.open();
        }
        events.push_back("data");
        return true;
      });
  ASSERT_TRUE(status.ok()) << status.error().message();
  EXPECT_EQ(body, "one,two,three");
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events[0], "head 200 text/event-stream");
  EXPECT_EQ(std::count(events.begin(), events.end(), "head 200 text/event-stream"), 1);
}

TEST(CurlUpstreamClient, EmptyBodyStillGetsItsHead) {
  TestServer server;
  server.routes().Delete("/thing",
                         [](const httplib::Request&, httplib::Response& res) { res.status = 204; });
  ASSERT_TRUE(server.start());
  CurlUpstreamClient client({server.url(), "", ""});
  net::UpstreamRequest request = get("/thing");
  request.method = "DELETE";
  int heads = 0;
  auto status = client.stream(
      request, quick(),
      [&](const net::UpstreamHead& head) {
        ++heads;
        EXPECT_EQ(head.status, 204);
        return true;
      },
      [](std::string_view) { return true; });
  ASSERT_TRUE(status.ok()) << status.error().message();
  EXPECT_EQ(heads, 1);
}

TEST(CurlUpstreamClient, HttpsWithAnUntrustedCertificateIsUnavailable) {
  SelfSigned tls;
  ASSERT_TRUE(tls.ok);
  TestServer server(tls);
  server.routes().Get("/hello", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("hello", "text/plain");
  });
  ASSERT_TRUE(server.start());
  CurlUpstreamClient client({server.url("https"), "", ""});
  auto response = client.send(get("/hello"), quick());
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code(), ErrorCode::kBackendUnavailable);
  EXPECT_NE(response.error().message().find("certificate"), std::string::npos)
      << response.error().message();
  EXPECT_EQ(server.hits.load(), 0);
}

TEST(CurlUpstreamClient, HttpsWithItsCertificateAsCaFileSucceeds) {
  TrustedCertificate trusted;
  ASSERT_TRUE(trusted.ok);
  TestServer server(trusted.tls);
  server.routes().Get("/hello", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("hello over tls", "text/plain");
  });
  ASSERT_TRUE(server.start());
  CurlUpstreamClient client({server.url("https"), "", trusted.ca});
  auto response = client.send(get("/hello"), quick());
  ASSERT_TRUE(response.ok()) << response.error().message();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "hello over tls");
  std::string body;
  auto streamed = stream_into(client, get("/hello"), quick(), body);
  ASSERT_TRUE(streamed.ok()) << streamed.error().message();
  EXPECT_EQ(body, "hello over tls");
}

TEST(CurlUpstreamClient, BearerTokenReplacesTheRequestsAuthorization) {
  std::mutex mu;
  std::vector<std::string> seen;
  TestServer server;
  server.routes().Get("/who", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    for (auto [it, end] = req.headers.equal_range("Authorization"); it != end; ++it) {
      seen.push_back(it->second);
    }
    res.set_content("ok", "text/plain");
  });
  ASSERT_TRUE(server.start());
  CurlUpstreamClient client({server.url(), "s3cret", ""});
  net::UpstreamRequest request = get("/who");
  request.headers.add("Authorization", "Bearer the-client's-key");
  auto response = client.send(request, quick());
  ASSERT_TRUE(response.ok()) << response.error().message();
  std::lock_guard lock(mu);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], "Bearer s3cret");
}

TEST(CurlUpstreamClient, RefusedPortIsUnavailable) {
  auto closed = lemon::testing::LoopbackListener::bound_only();
  ASSERT_TRUE(closed.is_open());
  CurlUpstreamClient client({"http://127.0.0.1:" + std::to_string(closed.port()), "", ""});
  auto response = client.send(get("/"), quick());
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code(), ErrorCode::kBackendUnavailable) << response.error().message();
}

TEST(CurlUpstreamClient, ConnectionLostMidBodyIsTypedByItsFraming) {
  TestServer server;
  // Chunked: a stream cut off between chunks is a backend that died.
  server.routes().Get("/chunked", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/plain", [](std::size_t, httplib::DataSink& sink) {
      sink.write("part", 4);
      return false;  // drops the connection
    });
  });
  // Content-Length: a body short of its length is a broken answer.
  server.routes().Get("/sized", [](const httplib::Request&, httplib::Response& res) {
    res.set_content_provider(100, "text/plain",
                             [](std::size_t, std::size_t, httplib::DataSink& sink) {
                               sink.write("part", 4);
                               return false;
                             });
  });
  ASSERT_TRUE(server.start());
  CurlUpstreamClient client({server.url(), "", ""});
  std::string body;
  auto chunked = stream_into(client, get("/chunked"), quick(), body);
  ASSERT_FALSE(chunked.ok());
  EXPECT_EQ(chunked.error().code(), ErrorCode::kBackendCrashed) << chunked.error().message();
  EXPECT_EQ(body, "part");
  auto sized = client.send(get("/sized"), quick());
  ASSERT_FALSE(sized.ok());
  EXPECT_EQ(sized.error().code(), ErrorCode::kUpstreamProtocol) << sized.error().message();
}

TEST(CurlUpstreamClient, IdleTimeoutIsGatewayTimeout) {
  TestServer server;
  server.routes().Get("/silent", [&server](const httplib::Request&, httplib::Response& res) {
    server.release.wait(30s);
    res.set_content("late", "text/plain");
  });
  ASSERT_TRUE(server.start());
  CurlUpstreamClient client({server.url(), "", ""});
  auto options = quick();
  options.idle_timeout = 200ms;
  auto response = client.send(get("/silent"), options);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code(), ErrorCode::kGatewayTimeout) << response.error().message();
}

TEST(CurlUpstreamClient, StillWorkingExtendsTheIdleTimeout) {
  Gate asked_twice;
  TestServer server;
  server.routes().Get("/slow", [&](const httplib::Request&, httplib::Response& res) {
    asked_twice.wait(30s);  // answers only once the client asked twice
    res.set_content("done", "text/plain");
  });
  ASSERT_TRUE(server.start());
  CurlUpstreamClient client({server.url(), "", ""});
  auto options = quick();
  options.idle_timeout = 100ms;
  options.working_recheck = 100ms;
  std::atomic<int> asked{0};
  options.still_working = [&] {
    if (++asked == 2) {
      asked_twice.open();
    }
    return true;
  };
  auto response = client.send(get("/slow"), options);
  ASSERT_TRUE(response.ok()) << response.error().message();
  EXPECT_EQ(response->body, "done");
  EXPECT_GE(asked.load(), 2);
}

TEST(CurlUpstreamClient, WatchedClientGoneCancelsPromptly) {
  Gate arrived;
  TestServer server;
  server.routes().Get("/hold", [&server, &arrived](const httplib::Request&, httplib::Response&) {
    arrived.open();
    server.release.wait(30s);
  });
  ASSERT_TRUE(server.start());
  int pair[2] = {-1, -1};
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  CurlUpstreamClient client({server.url(), "", ""});
  auto options = quick();
  options.watch_fd = pair[0];
  auto call = std::async(std::launch::async, [&] { return client.send(get("/hold"), options); });
  ASSERT_TRUE(arrived.wait());
  const auto closed_at = std::chrono::steady_clock::now();
  ::close(pair[1]);
  ASSERT_EQ(call.wait_for(10s), std::future_status::ready);
  const auto took = std::chrono::steady_clock::now() - closed_at;
  auto response = call.get();
  ::close(pair[0]);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code(), ErrorCode::kCancelled) << response.error().message();
  EXPECT_LT(took, 2s);
}

TEST(CurlUpstreamClient, OnDataReturningFalseCancels) {
  TestServer server;
  server.routes().Get("/data", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(1000, 'x'), "text/plain");
  });
  ASSERT_TRUE(server.start());
  CurlUpstreamClient client({server.url(), "", ""});
  auto status = client.stream(
      get("/data"), quick(), [](const net::UpstreamHead&) { return true; },
      [](std::string_view) { return false; });
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code(), ErrorCode::kCancelled);
}

TEST(CurlUpstreamClient, ReplyOverMaxResponseBytesIsProtocolError) {
  TestServer server;
  server.routes().Get("/big", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(10000, 'x'), "text/plain");
  });
  ASSERT_TRUE(server.start());
  CurlUpstreamClient client({server.url(), "", ""});
  auto options = quick();
  options.max_response_bytes = 100;
  auto response = client.send(get("/big"), options);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code(), ErrorCode::kUpstreamProtocol);
  EXPECT_EQ(response.error().message(),
            "the backend's reply exceeds 100 bytes (--max-response-size)");
}

TEST(CurlUpstreamClient, NoAnswerIsUnavailable) {
  // Closed or reset before a byte of an answer: nothing was answered.
  for (auto then : {ScriptedBackend::Then::kClose, ScriptedBackend::Then::kReset}) {
    ScriptedBackend backend("", then);
    CurlUpstreamClient client({backend.url(), "", ""});
    auto response = client.send(get("/"), quick());
    ASSERT_FALSE(response.ok());
    EXPECT_EQ(response.error().code(), ErrorCode::kBackendUnavailable)
        << response.error().message();
  }
}

TEST(CurlUpstreamClient, LostWithinTheHeadIsCrashed) {
  ScriptedBackend backend("HTTP/1.1 200 OK\r\nContent-Type: text/pl",
                          ScriptedBackend::Then::kClose);
  CurlUpstreamClient client({backend.url(), "", ""});
  auto response = client.send(get("/"), quick());
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code(), ErrorCode::kBackendCrashed) << response.error().message();
}

TEST(CurlUpstreamClient, GarbageIsProtocolError) {
  const std::string replies[] = {
      "garbage\r\n\r\n",
      // A bad chunk on a connection the backend keeps open.
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n",
  };
  for (const auto& reply : replies) {
    ScriptedBackend backend(reply, ScriptedBackend::Then::kHold);
    CurlUpstreamClient client({backend.url(), "", ""});
    auto response = client.send(get("/"), quick());
    ASSERT_FALSE(response.ok());
    EXPECT_EQ(response.error().code(), ErrorCode::kUpstreamProtocol)
        << reply << ": " << response.error().message();
  }
}

TEST(CurlUpstreamClient, InterimResponsesAreSkipped) {
  ScriptedBackend backend(
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX-Final: 1\r\nContent-Length: "
      "2\r\n\r\nok",
      ScriptedBackend::Then::kHold);
  CurlUpstreamClient client({backend.url(), "", ""});
  auto response = client.send(get("/"), quick());
  ASSERT_TRUE(response.ok()) << response.error().message();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "ok");
  EXPECT_EQ(response->headers.get("X-Final").value_or(""), "1");
}

TEST(CurlUpstreamClient, TlsConnectionLostMidStreamIsCrashed) {
  TrustedCertificate trusted;
  ASSERT_TRUE(trusted.ok);
  TestServer server(trusted.tls);
  server.routes().Get("/chunked", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/plain", [](std::size_t, httplib::DataSink& sink) {
      sink.write("part", 4);
      return false;  // drops the connection
    });
  });
  ASSERT_TRUE(server.start());
  CurlUpstreamClient client({server.url("https"), "", trusted.ca});
  std::string body;
  auto status = stream_into(client, get("/chunked"), quick(), body);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code(), ErrorCode::kBackendCrashed) << status.error().message();
  EXPECT_EQ(body, "part");
}

TEST(CurlUpstreamClient, OnTickReturningFalseCancels) {
  ScriptedBackend backend("", ScriptedBackend::Then::kHold);
  CurlUpstreamClient client({backend.url(), "", ""});
  auto options = quick();
  options.tick_interval = 20ms;
  options.on_tick = [] { return false; };
  auto response = client.send(get("/"), options);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code(), ErrorCode::kCancelled);
}

TEST(CurlUpstreamClient, TotalTimeoutIsGatewayTimeout) {
  ScriptedBackend backend("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhal",
                          ScriptedBackend::Then::kHold);
  CurlUpstreamClient client({backend.url(), "", ""});
  auto options = quick();
  options.total_timeout = 200ms;
  auto response = client.send(get("/"), options);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code(), ErrorCode::kGatewayTimeout) << response.error().message();
}

// Answers with the port the call came from: which connection carried it.
void answer_with_client_port(TestServer& server) {
  server.routes().Post("/v1/chat/completions",
                       [](const httplib::Request& req, httplib::Response& res) {
                         res.set_content(std::to_string(req.remote_port), "text/plain");
                       });
}

net::UpstreamRequest chat() {
  net::UpstreamRequest r;
  r.path = "/v1/chat/completions";
  r.content_type = "application/json";
  r.body = R"({"model":"m"})";
  return r;
}

TEST(CurlUpstreamClient, HttpsCallsKeepOneConnectionAlive) {
  TrustedCertificate trusted;
  ASSERT_TRUE(trusted.ok);
  TestServer server(trusted.tls);
  answer_with_client_port(server);
  ASSERT_TRUE(server.start());
  CurlUpstreamClient client({server.url("https"), "", trusted.ca});
  std::set<std::string> ports;
  for (int i = 0; i < 4; ++i) {
    auto response = client.send(chat(), quick());
    ASSERT_TRUE(response.ok()) << response.error().message();
    ASSERT_EQ(response->status, 200);
    ports.insert(response->body);
  }
  EXPECT_EQ(ports.size(), 1u) << "each call made a TCP and TLS handshake of its own";
  EXPECT_EQ(server.hits.load(), 4);
}

TEST(CurlUpstreamClient, AKeptConnectionTheServerClosedIsReplacedUnseen) {
  TrustedCertificate trusted;
  ASSERT_TRUE(trusted.ok);
  auto first = std::make_unique<TestServer>(trusted.tls);
  // It closes a connection idle for 1 s, announcing nothing; its stop
  // waits for that.
  first->routes().set_keep_alive_timeout(1);
  answer_with_client_port(*first);
  ASSERT_TRUE(first->start());
  // Ended before the servers, so that none waits out its keep-alive timeout
  // on the connection this client keeps.
  auto client = std::make_unique<CurlUpstreamClient>(
      CurlUpstreamSettings{first->url("https"), "", trusted.ca});
  auto before = client->send(chat(), quick());
  ASSERT_TRUE(before.ok()) << before.error().message();
  auto again = client->send(chat(), quick());
  ASSERT_TRUE(again.ok()) << again.error().message();
  ASSERT_EQ(again->body, before->body) << "the connection was not kept, so none is replaced";
  TestServer second(trusted.tls);
  answer_with_client_port(second);
  ASSERT_TRUE(second.start(first->port()));
  first.reset();  // its threads are joined: the kept connection was closed
  auto after = client->send(chat(), quick());
  client.reset();
  ASSERT_TRUE(after.ok()) << after.error().message();
  EXPECT_EQ(after->status, 200);
  EXPECT_NE(after->body, before->body);
  EXPECT_EQ(second.hits.load(), 1);
}

TEST(CurlUpstreamClient, ConcurrentHttpsCallsShareTheirConnections) {
  TrustedCertificate trusted;
  ASSERT_TRUE(trusted.ok);
  TestServer server(trusted.tls);
  server.routes().set_keep_alive_max_count(1000);
  answer_with_client_port(server);
  ASSERT_TRUE(server.start());
  CurlUpstreamClient client({server.url("https"), "", trusted.ca});
  constexpr int kThreads = 6;  // more than libcurl keeps by default for one transfer (4)
  constexpr int kCalls = 10;
  std::mutex mu;
  std::set<std::string> ports;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) {
        auto response = client.send(chat(), quick());
        if (!response.ok() || response->status != 200) {
          ++failures;
          continue;
        }
        std::lock_guard lock(mu);
        ports.insert(response->body);
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(server.hits.load(), kThreads * kCalls);
  // No more connections than calls at once: each call took a kept one when
  // one was idle.
  EXPECT_LE(ports.size(), static_cast<std::size_t>(kThreads));
}

}  // namespace curl_upstream_test
}  // namespace lemon::download
