#include "lemon/http/multipart.h"

#include <gtest/gtest.h>

#include <string>

namespace lemon::http {
namespace {

TEST(HttpMultipart, BoundaryFromContentType) {
  EXPECT_EQ(multipart_boundary("multipart/form-data; boundary=----abc"), "----abc");
  EXPECT_EQ(multipart_boundary("Multipart/Form-Data;BOUNDARY=\"a b;c\""), "a b;c");
  EXPECT_EQ(multipart_boundary("multipart/form-data; charset=utf-8; boundary=xyz "), "xyz");
  EXPECT_FALSE(multipart_boundary("application/json; boundary=x").has_value());
  EXPECT_FALSE(multipart_boundary("multipart/form-data").has_value());
  EXPECT_FALSE(multipart_boundary("multipart/form-data; boundary=").has_value());
  EXPECT_FALSE(multipart_boundary("multipart/form-data; boundary=\"unterminated").has_value());
}

TEST(HttpMultipart, ParsesFieldsAndFiles) {
  const std::string body =
      "--XyZ\r\n"
      "Content-Disposition: form-data; name=\"model\"\r\n"
      "\r\n"
      "whisper-tiny\r\n"
      "--XyZ\r\n"
      "content-disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n"
      "Content-Type: audio/wav\r\n"
      "\r\n"
      "RIFF....\r\n"
      "--XyZ--\r\n";
  auto parts = parse_multipart(body, "XyZ");
  ASSERT_TRUE(parts.ok()) << parts.error().message();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].name, "model");
  EXPECT_EQ((*parts)[0].data, "whisper-tiny");
  EXPECT_EQ((*parts)[0].filename, "");
  EXPECT_EQ((*parts)[0].content_type, "");
  EXPECT_EQ((*parts)[1].name, "file");
  EXPECT_EQ((*parts)[1].filename, "a.wav");
  EXPECT_EQ((*parts)[1].content_type, "audio/wav");
  EXPECT_EQ((*parts)[1].data, "RIFF....");
  // Data views into the body.
  EXPECT_GE((*parts)[1].data.data(), body.data());
  EXPECT_LT((*parts)[1].data.data(), body.data() + body.size());
  const MultipartPart* file = find_part(*parts, "file");
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(file->filename, "a.wav");
  EXPECT_EQ(find_part(*parts, "nope"), nullptr);
}

TEST(HttpMultipart, QuotedBoundaryRoundTrip) {
  auto boundary = multipart_boundary("multipart/form-data; boundary=\"b:o=u n\\\"d\"");
  ASSERT_TRUE(boundary.has_value());
  EXPECT_EQ(*boundary, "b:o=u n\"d");
  const std::string body = "--" + *boundary +
                           "\r\nContent-Disposition: form-data; name=x\r\n\r\n1\r\n--" + *boundary +
                           "--";
  auto parts = parse_multipart(body, *boundary);
  ASSERT_TRUE(parts.ok()) << parts.error().message();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].name, "x");
  EXPECT_EQ((*parts)[0].data, "1");
}

TEST(HttpMultipart, FilenameWithEscapedQuotesAndSemicolon) {
  const std::string body =
      "--b\r\n"
      "Content-Disposition: form-data; name=\"f\"; filename=\"my \\\"best\\\"; take.wav\"\r\n"
      "\r\n"
      "x\r\n"
      "--b--";
  auto parts = parse_multipart(body, "b");
  ASSERT_TRUE(parts.ok()) << parts.error().message();
  EXPECT_EQ((*parts)[0].filename, "my \"best\"; take.wav");
}

TEST(HttpMultipart, ExtendedFilename) {
  const std::string body =
      "--b\r\n"
      "Content-Disposition: form-data; name=\"f\"; filename*=UTF-8''%C3%A9t%C3%A9.wav\r\n"
      "\r\n"
      "x\r\n"
      "--b--";
  auto parts = parse_multipart(body, "b");
  ASSERT_TRUE(parts.ok()) << parts.error().message();
  EXPECT_EQ((*parts)[0].filename, "\xC3\xA9t\xC3\xA9.wav");
}

TEST(HttpMultipart, BinaryDataWithCrLfInside) {
  std::string payload("\r\n\r\n--\0\xff\r\n-b\r\n--bx", 17);
  payload += "\r\n--not-the-boundary\r\n\r";
  const std::string body =
      "preamble text\r\n--bb\r\n"
      "Content-Disposition: form-data; name=\"file\"; filename=\"x.bin\"\r\n"
      "Content-Type: application/octet-stream\r\n\r\n" +
      payload +
      "\r\n--bb\r\nContent-Disposition: form-data; name=\"e\"\r\n\r\n"
      "\r\n--bb--\r\nepilogue";
  auto parts = parse_multipart(body, "bb");
  ASSERT_TRUE(parts.ok()) << parts.error().message();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].data, payload);
  EXPECT_EQ((*parts)[0].data.size(), payload.size());
  EXPECT_EQ((*parts)[1].name, "e");
  EXPECT_EQ((*parts)[1].data, "");
}

TEST(HttpMultipart, TransportPaddingAfterBoundary) {
  const std::string body = "--b  \r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n--b--";
  auto parts = parse_multipart(body, "b");
  ASSERT_TRUE(parts.ok()) << parts.error().message();
  EXPECT_EQ((*parts)[0].data, "v");
}

TEST(HttpMultipart, EmptyFormHasNoParts) {
  auto parts = parse_multipart("--b--\r\n", "b");
  ASSERT_TRUE(parts.ok());
  EXPECT_TRUE(parts->empty());
}

TEST(HttpMultipart, MalformedInputs) {
  struct Case {
    const char* name;
    std::string body;
  };
  const std::string cd = "Content-Disposition: form-data; name=\"a\"\r\n";
  const Case cases[] = {
      {"no boundary at all", "hello world"},
      {"missing close delimiter", "--b\r\n" + cd + "\r\ndata"},
      {"missing CRLF after boundary", "--bxyz\r\n" + cd + "\r\nv\r\n--b--"},
      {"unterminated headers", "--b\r\n" + cd + "no blank line"},
      {"header without colon", "--b\r\nContent-Disposition form-data\r\n\r\nv\r\n--b--"},
      {"no content-disposition", "--b\r\nContent-Type: text/plain\r\n\r\nv\r\n--b--"},
      {"no headers at all", "--b\r\n\r\nv\r\n--b--"},
      {"no name", "--b\r\nContent-Disposition: form-data; filename=\"x\"\r\n\r\nv\r\n--b--"},
      {"not form-data", "--b\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nv\r\n--b--"},
      {"unterminated quote", "--b\r\nContent-Disposition: form-data; name=\"a\r\n\r\nv\r\n--b--"},
      {"ends after boundary", "--b"},
      {"bare LF after boundary", "--b\n" + cd + "\r\nv\r\n--b--"},
  };
  for (const auto& c : cases) {
    auto parts = parse_multipart(c.body, "b");
    ASSERT_FALSE(parts.ok()) << c.name;
    EXPECT_EQ(parts.error().code(), ErrorCode::kInvalidRequest) << c.name;
    EXPECT_NE(parts.error().message().find("multipart"), std::string::npos) << c.name;
  }
  EXPECT_FALSE(parse_multipart("--\r\n", "").ok());
}

}  // namespace
}  // namespace lemon::http
