// Tests for the internal HTTP/1.1 wire parser (src/net/wire_parser.h).
#include "../../src/net/wire_parser.h"

#include <gtest/gtest.h>

#include <string>

namespace lemon::net::wire {
namespace {

TEST(HttpWire, FindHeadEnd) {
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nA: b\r\n\r\nbody"), 24u);
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\n\nrest"), 16u);
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nA: b\r\n"), std::string::npos);
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nA: b\r\n\r"), std::string::npos);
  std::string buf = "GET / HTTP/1.1\r\nA: b\r\n\r\n";
  EXPECT_EQ(find_head_end(buf, buf.size() - 3), buf.size());
}

TEST(HttpWire, ParsesRequestHead) {
  RequestHead head;
  std::string why;
  ASSERT_EQ(parse_request_head("POST /v1/x?a=1 HTTP/1.1\r\nHost: h\r\nX-Y:  z \r\n\r\n", head, why),
            HeadError::kNone)
      << why;
  EXPECT_EQ(head.method, "POST");
  EXPECT_EQ(head.target, "/v1/x?a=1");
  EXPECT_EQ(head.minor_version, 1);
  EXPECT_EQ(*head.headers.get("x-y"), "z");
}

TEST(HttpWire, ToleratesBareLf) {
  RequestHead head;
  std::string why;
  ASSERT_EQ(parse_request_head("GET / HTTP/1.0\nA: 1\n\n", head, why), HeadError::kNone);
  EXPECT_EQ(head.minor_version, 0);
  EXPECT_EQ(*head.headers.get("a"), "1");
}

TEST(HttpWire, RejectsMalformedRequestHeads) {
  const char* bad[] = {
      "GET /\r\n\r\n",                         // no version
      "GET  / HTTP/1.1\r\n\r\n",               // double space
      "GET / HTTP/2.0\r\n\r\n",                // unsupported version
      "G(T / HTTP/1.1\r\n\r\n",                // bad method
      "GET nopath HTTP/1.1\r\n\r\n",           // bad target
      "GET / HTTP/1.1\r\nA b\r\n\r\n",         // no colon
      "GET / HTTP/1.1\r\nA : b\r\n\r\n",       // space before colon
      "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n",  // obs-fold
      "GET / HTTP/1.1\r\nA: b\rc\r\n\r\n",     // stray CR
      "GET / HTTP/1.1\r\nA: b\x01\r\n\r\n",    // control character
  };
  for (const char* text : bad) {
    RequestHead head;
    std::string why;
    EXPECT_EQ(parse_request_head(text, head, why), HeadError::kMalformed) << text;
    EXPECT_FALSE(why.empty());
  }
}

TEST(HttpWire, LongTargetIsUriTooLong) {
  RequestHead head;
  std::string why;
  std::string text = "GET /" + std::string(kMaxTarget, 'a') + " HTTP/1.1\r\n\r\n";
  EXPECT_EQ(parse_request_head(text, head, why), HeadError::kUriTooLong);
}

TEST(HttpWire, ParsesResponseHead) {
  ResponseHead head;
  std::string why;
  ASSERT_TRUE(
      parse_response_head("HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\n", head, why));
  EXPECT_EQ(head.status, 404);
  EXPECT_EQ(*head.headers.get("content-length"), "3");
  ResponseHead no_reason;
  EXPECT_TRUE(parse_response_head("HTTP/1.0 200\r\n\r\n", no_reason, why));
  EXPECT_EQ(no_reason.minor_version, 0);
  ResponseHead bad;
  EXPECT_FALSE(parse_response_head("HTTP/1.1 2x0 OK\r\n\r\n", bad, why));
  EXPECT_FALSE(parse_response_head("ICY 200 OK\r\n\r\n", bad, why));
}

TEST(HttpWire, ContentLength) {
  std::uint64_t n = 0;
  EXPECT_EQ(content_length(Headers{}, n), LengthField::kAbsent);
  EXPECT_EQ(content_length(Headers{{"Content-Length", "42"}}, n), LengthField::kValid);
  EXPECT_EQ(n, 42u);
  EXPECT_EQ(content_length(Headers{{"Content-Length", "5, 5"}}, n), LengthField::kValid);
  EXPECT_EQ(content_length(Headers{{"Content-Length", "5"}, {"content-length", "5"}}, n),
            LengthField::kValid);
  EXPECT_EQ(content_length(Headers{{"Content-Length", "5"}, {"content-length", "6"}}, n),
            LengthField::kInvalid);
  EXPECT_EQ(content_length(Headers{{"Content-Length", "-1"}}, n), LengthField::kInvalid);
  EXPECT_EQ(content_length(Headers{{"Content-Length", "+1"}}, n), LengthField::kInvalid);
  EXPECT_EQ(content_length(Headers{{"Content-Length", ""}}, n), LengthField::kInvalid);
  EXPECT_EQ(content_length(Headers{{"Content-Length", "99999999999999999999"}}, n),
            LengthField::kInvalid);
}

TEST(HttpWire, TransferCodingAndTokens) {
  EXPECT_EQ(transfer_coding(Headers{}), TransferCoding::kNone);
  EXPECT_EQ(transfer_coding(Headers{{"Transfer-Encoding", "Chunked"}}), TransferCoding::kChunked);
  EXPECT_EQ(transfer_coding(Headers{{"Transfer-Encoding", "gzip, chunked"}}),
            TransferCoding::kOther);
  EXPECT_EQ(transfer_coding(Headers{{"Transfer-Encoding", "chunked, chunked"}}),
            TransferCoding::kOther);
  EXPECT_TRUE(has_token(Headers{{"Connection", "Upgrade, Close"}}, "connection", "close"));
  EXPECT_FALSE(has_token(Headers{{"Connection", "closed"}}, "Connection", "close"));
}

std::string decode_all(ChunkedDecoder& d, std::string_view in, ChunkedDecoder::Step& last,
                       std::string_view* rest = nullptr) {
  std::string out;
  std::string_view piece;
  for (;;) {
    last = d.next(in, piece);
    if (last == ChunkedDecoder::Step::kData) {
      out.append(piece);
      continue;
    }
    break;
  }
  if (rest != nullptr) {
    *rest = in;
  }
  return out;
}

TEST(HttpWire, ChunkedDecodesWholeBody) {
  ChunkedDecoder d;
  ChunkedDecoder::Step last{};
  std::string_view rest;
  std::string out = decode_all(
      d, "5;ext=1\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\nNEXT", last, &rest);
  EXPECT_EQ(last, ChunkedDecoder::Step::kDone);
  EXPECT_EQ(out, "hello 0123456789");
  EXPECT_EQ(rest, "NEXT");
}

TEST(HttpWire, ChunkedDecodesByteByByte) {
  const std::string wire = "3\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n";
  ChunkedDecoder d;
  std::string out;
  ChunkedDecoder::Step last = ChunkedDecoder::Step::kNeedMore;
  for (char c : wire) {
    ASSERT_EQ(last, ChunkedDecoder::Step::kNeedMore);
    out += decode_all(d, std::string_view(&c, 1), last);
  }
  EXPECT_EQ(last, ChunkedDecoder::Step::kDone);
  EXPECT_EQ(out, "abc0123456789abcdef");
}

TEST(HttpWire, ChunkedHandsOutPartialChunks) {
  ChunkedDecoder d;
  ChunkedDecoder::Step last{};
  EXPECT_EQ(decode_all(d, "a\r\nhel", last), "hel");
  EXPECT_EQ(last, ChunkedDecoder::Step::kNeedMore);
  EXPECT_EQ(decode_all(d, "lo", last), "lo");
  EXPECT_EQ(last, ChunkedDecoder::Step::kNeedMore);
}

TEST(HttpWire, ChunkedRejectsGarbage) {
  for (const char* bad :
       {"x\r\n", "3\r\nabcX", "\r\n", "3\r\nabc\r\nzz\r\n", "FFFFFFFFFFFFFFFFFF\r\n"}) {
    ChunkedDecoder d;
    ChunkedDecoder::Step last{};
    decode_all(d, bad, last);
    EXPECT_EQ(last, ChunkedDecoder::Step::kError) << bad;
  }
}

TEST(HttpWire, ChunkedStopsAtLimitBeforeData) {
  ChunkedDecoder d(10);
  ChunkedDecoder::Step last{};
  EXPECT_EQ(decode_all(d, "8\r\n12345678\r\n", last), "12345678");
  EXPECT_EQ(last, ChunkedDecoder::Step::kNeedMore);
  EXPECT_EQ(decode_all(d, "3\r\n", last), "");
  EXPECT_EQ(last, ChunkedDecoder::Step::kTooLarge);
}

}  // namespace
}  // namespace lemon::net::wire
