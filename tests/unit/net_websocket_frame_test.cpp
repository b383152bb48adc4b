// The WebSocket codec (src/net/websocket_frame.h) against RFC 6455 §5 and
// §7: every rule a client's frame can break, the server's frames, close
// bodies and reassembly with its limit and UTF-8 checks.
#include "../../src/net/websocket_frame.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/websocket_client.h"

namespace lemon::net::ws {
namespace {

using lemon::testing::WsClient;

struct Parsed {
  ParseStep step = ParseStep::kNeedMore;
  Frame frame;
  std::size_t consumed = 0;
  FrameError error;
};

Parsed parse(const std::string& bytes, std::size_t max = 1 << 20) {
  Parsed p;
  p.step = parse_client_frame(bytes, max, p.frame, p.consumed, p.error);
  return p;
}

void expect_error(const std::string& bytes, std::uint16_t code, const std::string& what) {
  Parsed p = parse(bytes);
  EXPECT_EQ(p.step, ParseStep::kError) << what;
  EXPECT_EQ(p.error.code, code) << what << ": " << p.error.reason;
  EXPECT_FALSE(p.error.reason.empty()) << what;
}

TEST(WebSocketFrame, ParsesAMaskedTextFrame) {
  const std::string wire = WsClient::frame(0x1, "Hello") + "rest";
  Parsed p = parse(wire);
  ASSERT_EQ(p.step, ParseStep::kFrame);
  EXPECT_EQ(p.frame.opcode, Opcode::kText);
  EXPECT_TRUE(p.frame.fin);
  EXPECT_EQ(p.frame.payload, "Hello");
  EXPECT_EQ(p.consumed, wire.size() - 4);
}

TEST(WebSocketFrame, RfcExampleMaskedHello) {
  // RFC 6455 5.7: a single-frame masked text message "Hello".
  const std::string wire = "\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58";
  Parsed p = parse(wire);
  ASSERT_EQ(p.step, ParseStep::kFrame);
  EXPECT_EQ(p.frame.payload, "Hello");
}

TEST(WebSocketFrame, EveryCutOfAFrameNeedsMore) {
  for (std::size_t size : {0u, 5u, 125u, 126u, 300u, 65535u, 65536u, 70000u}) {
    const std::string wire = WsClient::frame(0x2, std::string(size, 'x'));
    for (std::size_t cut : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3},
                            std::size_t{9}, wire.size() / 2, wire.size() - 1}) {
      if (cut >= wire.size()) {
        continue;
      }
      Parsed p = parse(wire.substr(0, cut));
      EXPECT_EQ(p.step, ParseStep::kNeedMore) << size << " cut at " << cut;
      EXPECT_EQ(p.consumed, 0u);
    }
    Parsed whole = parse(wire);
    ASSERT_EQ(whole.step, ParseStep::kFrame) << size;
    EXPECT_EQ(whole.frame.payload.size(), size);
    EXPECT_EQ(whole.consumed, wire.size());
  }
}

TEST(WebSocketFrame, RefusesWhatAClientMayNotSend) {
  expect_error(WsClient::frame(0x1, "hi", true, false), 1002, "unmasked");
  for (int rsv : {0x40, 0x20, 0x10}) {
    std::string wire = WsClient::frame(0x1, "hi");
    wire[0] = static_cast<char>(wire[0] | rsv);
    expect_error(wire, 1002, "RSV bit " + std::to_string(rsv));
  }
  for (int op : {0x3, 0x4, 0x5, 0x6, 0x7, 0xB, 0xC, 0xD, 0xE, 0xF}) {
    expect_error(WsClient::frame(static_cast<std::uint8_t>(op), "x"), 1002,
                 "opcode " + std::to_string(op));
  }
  expect_error(WsClient::frame(0x9, std::string(126, 'p')), 1002, "a 126-byte ping");
  expect_error(WsClient::frame(0x8, std::string(200, 'c')), 1002, "a 200-byte close");
  expect_error(WsClient::frame(0x9, "p", false), 1002, "a fragmented ping");
  expect_error(WsClient::frame(0xA, "p", false), 1002, "a fragmented pong");
}

TEST(WebSocketFrame, LengthsMustUseTheShortestForm) {
  // 5 bytes announced in the 16-bit form.
  std::string wire16 = "\x81\xFE";
  wire16 += std::string("\x00\x05", 2);
  wire16 += std::string("\x00\x00\x00\x00", 4) + "hello";
  expect_error(wire16, 1002, "16-bit length under 126");
  // 200 bytes announced in the 64-bit form.
  std::string wire64 = "\x82\xFF";
  wire64 += std::string("\x00\x00\x00\x00\x00\x00\x00\xC8", 8);
  wire64 += std::string(4, '\0') + std::string(200, 'x');
  expect_error(wire64, 1002, "64-bit length under 65536");
  std::string top = "\x82\xFF";
  top += std::string("\x80\x00\x00\x00\x00\x01\x00\x00", 8);
  expect_error(top, 1002, "64-bit length with the top bit set");
}

TEST(WebSocketFrame, AFrameOverTheLimitIsRefusedFromItsHeader) {
  // 2^40 bytes announced: refused before any payload arrives.
  std::string wire = "\x82\xFF";
  wire += std::string("\x00\x00\x01\x00\x00\x00\x00\x00", 8);
  Parsed p = parse(wire, 1 << 16);
  ASSERT_EQ(p.step, ParseStep::kError);
  EXPECT_EQ(p.error.code, 1009);
  EXPECT_EQ(parse(WsClient::frame(0x2, std::string(1001, 'x')), 1000).error.code, 1009);
  EXPECT_EQ(parse(WsClient::frame(0x2, std::string(1000, 'x')), 1000).step, ParseStep::kFrame);
}

TEST(WebSocketFrame, ServerFramesAreUnmaskedWithTheShortestLength) {
  auto header_size = [](std::size_t n) {
    return encode_frame(Opcode::kText, std::string(n, 'a')).size() - n;
  };
  EXPECT_EQ(header_size(0), 2u);
  EXPECT_EQ(header_size(125), 2u);
  EXPECT_EQ(header_size(126), 4u);
  EXPECT_EQ(header_size(65535), 4u);
  EXPECT_EQ(header_size(65536), 10u);
  const std::string f = encode_frame(Opcode::kBinary, "abc", false);
  EXPECT_EQ(static_cast<std::uint8_t>(f[0]), 0x02);  // no FIN
  EXPECT_EQ(static_cast<std::uint8_t>(f[1]), 3);     // no mask bit
  EXPECT_EQ(f.substr(2), "abc");
  // A masked frame round-trips through the parser.
  Parsed p = parse(encode_masked_frame(Opcode::kText, std::string(70000, 'z'), {1, 2, 3, 4}));
  ASSERT_EQ(p.step, ParseStep::kFrame);
  EXPECT_EQ(p.frame.payload, std::string(70000, 'z'));
}

TEST(WebSocketFrame, CloseBodies) {
  CloseBody body;
  FrameError error;
  ASSERT_TRUE(parse_close_payload("", body, error));
  EXPECT_EQ(body.code, 1005);
  EXPECT_FALSE(parse_close_payload("\x03", body, error));
  EXPECT_EQ(error.code, 1002);
  for (int code : {0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535}) {
    const std::string p = close_payload(static_cast<std::uint16_t>(code), "");
    EXPECT_FALSE(parse_close_payload(p, body, error)) << code;
    EXPECT_EQ(error.code, 1002) << code;
  }
  for (int code : {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1013, 3000, 4999}) {
    ASSERT_TRUE(
        parse_close_payload(close_payload(static_cast<std::uint16_t>(code), "why"), body, error))
        << code;
    EXPECT_EQ(body.code, code);
    EXPECT_EQ(body.reason, "why");
  }
  EXPECT_FALSE(parse_close_payload(std::string("\x03\xE8\xC3\x28", 4), body, error));
  EXPECT_EQ(error.code, 1007);
}

TEST(WebSocketFrame, ACloseReasonIsCutToFitAtACharacterBoundary) {
  std::string reason;
  for (int i = 0; i < 100; ++i) {
    reason += "\xC3\xA9";  // é, two bytes
  }
  const std::string p = close_payload(1000, reason);
  EXPECT_LE(p.size(), kMaxControlPayload);
  EXPECT_EQ((p.size() - 2) % 2, 0u) << "no half character";
  EXPECT_EQ(utf8_prefix(p.substr(2), true), p.size() - 2);
}

TEST(WebSocketFrame, Utf8Prefix) {
  EXPECT_EQ(utf8_prefix("abc", true), 3u);
  EXPECT_EQ(utf8_prefix("a\xE2\x82", false), 1u) << "a character cut by the end, more to come";
  EXPECT_EQ(utf8_prefix("a\xE2\x82", true), std::nullopt);
  EXPECT_EQ(utf8_prefix("\xE2\x82\xAC", true), 3u);
  EXPECT_EQ(utf8_prefix("\xC0\x80", false), std::nullopt) << "overlong";
  EXPECT_EQ(utf8_prefix("\xED\xA0\x80", false), std::nullopt) << "a surrogate";
  EXPECT_EQ(utf8_prefix("\xF4\x90\x80\x80", false), std::nullopt) << "past U+10FFFF";
  EXPECT_EQ(utf8_prefix("\xE0\x80", false), std::nullopt) << "fails at the second byte";
  EXPECT_EQ(utf8_prefix("\xFF", false), std::nullopt);
}

Frame frame_of(Opcode op, std::string payload, bool fin = true) {
  return Frame{op, fin, std::move(payload)};
}

TEST(WebSocketMessages, FragmentsAreReassembledAroundControlFrames) {
  MessageAssembler a(100);
  EXPECT_EQ(a.add(frame_of(Opcode::kText, "Hel", false)).kind, MessageAssembler::Kind::kNone);
  auto ping = a.add(frame_of(Opcode::kPing, "p"));
  EXPECT_EQ(ping.kind, MessageAssembler::Kind::kControl);
  EXPECT_EQ(ping.opcode, Opcode::kPing);
  EXPECT_EQ(ping.message, "p");
  EXPECT_EQ(a.add(frame_of(Opcode::kContinuation, "lo ", false)).kind,
            MessageAssembler::Kind::kNone);
  auto done = a.add(frame_of(Opcode::kContinuation, "there"));
  ASSERT_EQ(done.kind, MessageAssembler::Kind::kMessage);
  EXPECT_EQ(done.opcode, Opcode::kText);
  EXPECT_EQ(done.message, "Hello there");
  // The next message starts afresh.
  auto next = a.add(frame_of(Opcode::kBinary, "\xFF\x00"));
  ASSERT_EQ(next.kind, MessageAssembler::Kind::kMessage);
  EXPECT_EQ(next.opcode, Opcode::kBinary);
}

TEST(WebSocketMessages, FragmentationRules) {
  {
    MessageAssembler a(100);
    auto r = a.add(frame_of(Opcode::kContinuation, "x"));
    EXPECT_EQ(r.kind, MessageAssembler::Kind::kError);
    EXPECT_EQ(r.error.code, 1002) << "a continuation with nothing to continue";
  }
  {
    MessageAssembler a(100);
    a.add(frame_of(Opcode::kText, "x", false));
    auto r = a.add(frame_of(Opcode::kText, "y"));
    EXPECT_EQ(r.kind, MessageAssembler::Kind::kError);
    EXPECT_EQ(r.error.code, 1002) << "a new message inside a fragmented one";
  }
}

TEST(WebSocketMessages, TheSizeLimitCountsEveryFragment) {
  MessageAssembler a(10);
  EXPECT_EQ(a.add(frame_of(Opcode::kBinary, "123456", false)).kind, MessageAssembler::Kind::kNone);
  auto r = a.add(frame_of(Opcode::kContinuation, "78901"));
  EXPECT_EQ(r.kind, MessageAssembler::Kind::kError);
  EXPECT_EQ(r.error.code, 1009);
  MessageAssembler b(10);
  EXPECT_EQ(b.add(frame_of(Opcode::kText, "1234567890")).kind, MessageAssembler::Kind::kMessage);
}

TEST(WebSocketMessages, TextMustBeUtf8AndFailsFast) {
  {
    // A character split between fragments is fine.
    MessageAssembler a(100);
    EXPECT_EQ(a.add(frame_of(Opcode::kText, "\xE2\x82", false)).kind,
              MessageAssembler::Kind::kNone);
    auto r = a.add(frame_of(Opcode::kContinuation, "\xAC!"));
    ASSERT_EQ(r.kind, MessageAssembler::Kind::kMessage);
    EXPECT_EQ(r.message, "\xE2\x82\xAC!");
  }
  {
    // Invalid bytes in a first fragment: failed before the message ends.
    MessageAssembler a(100);
    auto r = a.add(frame_of(Opcode::kText, "ok\xFF", false));
    EXPECT_EQ(r.kind, MessageAssembler::Kind::kError);
    EXPECT_EQ(r.error.code, 1007);
  }
  {
    // A message that ends inside a character.
    MessageAssembler a(100);
    auto r = a.add(frame_of(Opcode::kText, "\xE2\x82"));
    EXPECT_EQ(r.kind, MessageAssembler::Kind::kError);
    EXPECT_EQ(r.error.code, 1007);
  }
  {
    // Binary is not checked.
    MessageAssembler a(100);
    EXPECT_EQ(a.add(frame_of(Opcode::kBinary, "\xFF\xFE")).kind, MessageAssembler::Kind::kMessage);
  }
}

}  // namespace
}  // namespace lemon::net::ws
