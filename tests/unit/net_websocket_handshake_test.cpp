// The WebSocket opening handshake's checks (RFC 6455 §4.2.1, §4.2.2) and
// the base64 they use (OpenSSL's).
#include <gtest/gtest.h>

#include <string>

#include "lemon/net/base64.h"
#include "lemon/net/websocket.h"

namespace lemon::net {
namespace {

Request upgrade_request() {
  Request r;
  r.method = "GET";
  r.target = "/realtime";
  r.path = "/realtime";
  r.headers.add("Host", "127.0.0.1:8000");
  r.headers.add("Upgrade", "websocket");
  r.headers.add("Connection", "Upgrade");
  r.headers.add("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==");
  r.headers.add("Sec-WebSocket-Version", "13");
  return r;
}

TEST(WebSocketHandshake, AcceptIsTheRfcsExample) {
  EXPECT_EQ(websocket_accept("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  auto accept = check_websocket_handshake(upgrade_request());
  ASSERT_TRUE(accept.ok()) << accept.error().message();
  EXPECT_EQ(*accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST(WebSocketHandshake, AnUpgradeIsAGetWithBothTokensInAnyCase) {
  Request r = upgrade_request();
  EXPECT_TRUE(is_websocket_upgrade(r));
  r.headers.set("Upgrade", "WebSocket");
  r.headers.set("Connection", "keep-alive, Upgrade");
  EXPECT_TRUE(is_websocket_upgrade(r));
  r.headers.set("Connection", "keep-alive");
  EXPECT_FALSE(is_websocket_upgrade(r));
  r = upgrade_request();
  r.headers.set("Upgrade", "h2c");
  EXPECT_FALSE(is_websocket_upgrade(r));
  r = upgrade_request();
  r.method = "POST";
  EXPECT_FALSE(is_websocket_upgrade(r));
}

TEST(WebSocketHandshake, VersionsOtherThan13Get426) {
  Request r = upgrade_request();
  r.headers.set("Sec-WebSocket-Version", "8");
  auto e = check_websocket_handshake(r);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code(), ErrorCode::kUpgradeRequired);
  r.headers.remove("Sec-WebSocket-Version");
  EXPECT_EQ(check_websocket_handshake(r).error().code(), ErrorCode::kUpgradeRequired);
  r = upgrade_request();
  r.headers.add("Sec-WebSocket-Version", "13");
  EXPECT_EQ(check_websocket_handshake(r).error().code(), ErrorCode::kUpgradeRequired)
      << "two versions";
}

TEST(WebSocketHandshake, KeysAndTheRestMustBeRight) {
  auto refused = [](Request r, const char* what) {
    auto e = check_websocket_handshake(r);
    ASSERT_FALSE(e.ok()) << what;
    EXPECT_EQ(e.error().code(), ErrorCode::kInvalidRequest) << what;
  };
  Request r = upgrade_request();
  r.headers.remove("Sec-WebSocket-Key");
  refused(r, "no key");
  r = upgrade_request();
  r.headers.set("Sec-WebSocket-Key", "not base64!");
  refused(r, "not base64");
  r.headers.set("Sec-WebSocket-Key", "c2hvcnQ=");  // "short"
  refused(r, "not 16 bytes");
  r = upgrade_request();
  r.headers.add("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==");
  refused(r, "two keys");
  r = upgrade_request();
  r.http10 = true;
  refused(r, "HTTP/1.0");
  r = upgrade_request();
  r.headers.add("Content-Length", "5");
  refused(r, "a body");
  r = upgrade_request();
  r.headers.add("Transfer-Encoding", "chunked");
  refused(r, "a chunked body");
  r = upgrade_request();
  r.headers.add("Content-Length", "0");
  EXPECT_TRUE(check_websocket_handshake(r).ok()) << "an empty body is no body";
}

TEST(WebSocketHandshake, OfferedSubprotocolsFromEveryField) {
  Request r = upgrade_request();
  r.headers.add("Sec-WebSocket-Protocol", "lemonade-realtime, bearer.abc");
  r.headers.add("Sec-WebSocket-Protocol", " chat ,, x");
  EXPECT_EQ(offered_subprotocols(r),
            (std::vector<std::string>{"lemonade-realtime", "bearer.abc", "chat", "x"}));
}

TEST(Base64, EncodesAndDecodesStrictly) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode(std::string("\xFB\xFF", 2)), "+/8=");
  for (std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    EXPECT_EQ(base64_decode(base64_encode(s)), s);
  }
  EXPECT_EQ(base64_decode("+/8="), std::string("\xFB\xFF", 2));
  for (const char* bad :
       {"Zg", "Zg=", "Z===", "Zm9v\n", " Zm9v", "Zm-v", "Zm_v", "Z=g=", "====", "Zm9v===="}) {
    EXPECT_EQ(base64_decode(bad), std::nullopt) << bad;
  }
}

TEST(Base64, UrlSafeAlphabetWithOptionalPadding) {
  EXPECT_EQ(base64url_decode("-_8"), std::string("\xFB\xFF", 2));
  EXPECT_EQ(base64url_decode("-_8="), std::string("\xFB\xFF", 2));
  EXPECT_EQ(base64url_decode("c2stdGVzdA"), "sk-test");
  EXPECT_EQ(base64url_decode("+/8"), std::nullopt) << "the standard alphabet";
  EXPECT_EQ(base64url_decode("c"), std::nullopt) << "a length no padding can fix";
}

}  // namespace
}  // namespace lemon::net
