#include "lemon/net/message.h"

#include <gtest/gtest.h>

namespace lemon::net {
namespace {

TEST(HttpHeaders, LookupIsCaseInsensitive) {
  Headers h{{"Content-Type", "application/json"}, {"X-A", "1"}};
  ASSERT_TRUE(h.get("content-type").has_value());
  EXPECT_EQ(*h.get("CONTENT-TYPE"), "application/json");
  EXPECT_TRUE(h.has("x-a"));
  EXPECT_FALSE(h.has("x-b"));
  EXPECT_FALSE(h.get("x-b").has_value());
}

TEST(HttpHeaders, GetReturnsFirstOfRepeatedFields) {
  Headers h;
  h.add("Set-Cookie", "a=1");
  h.add("set-cookie", "b=2");
  EXPECT_EQ(*h.get("Set-Cookie"), "a=1");
  EXPECT_EQ(h.fields().size(), 2u);
}

TEST(HttpHeaders, SetReplacesEveryField) {
  Headers h;
  h.add("X-A", "1");
  h.add("Other", "o");
  h.add("x-a", "2");
  h.set("X-a", "3");
  ASSERT_EQ(h.fields().size(), 2u);
  EXPECT_EQ(h.fields()[0].first, "X-a");
  EXPECT_EQ(h.fields()[0].second, "3");
  EXPECT_EQ(h.fields()[1].first, "Other");
  h.set("New", "n");
  EXPECT_EQ(*h.get("new"), "n");
}

TEST(HttpHeaders, RemoveDropsAllMatches) {
  Headers h{{"A", "1"}, {"b", "2"}, {"a", "3"}};
  h.remove("A");
  ASSERT_EQ(h.fields().size(), 1u);
  EXPECT_EQ(h.fields()[0].first, "b");
  h.remove("B");
  EXPECT_TRUE(h.empty());
}

TEST(HttpMessage, Iequals) {
  EXPECT_TRUE(iequals("Keep-Alive", "keep-alive"));
  EXPECT_FALSE(iequals("keep-alive", "keep-aliv"));
  EXPECT_TRUE(iequals("", ""));
}

TEST(HttpRequest, QueryParamDecodes) {
  Request r;
  r.query = "show_all=true&name=a%20b+c&empty=&flag&x%5B%5D=1&dup=1&dup=2";
  EXPECT_EQ(r.query_param("show_all"), "true");
  EXPECT_EQ(r.query_param("name"), "a b c");
  EXPECT_EQ(r.query_param("empty"), "");
  EXPECT_EQ(r.query_param("flag"), "");
  EXPECT_EQ(r.query_param("x[]"), "1");
  EXPECT_EQ(r.query_param("dup"), "1");
  EXPECT_FALSE(r.query_param("missing").has_value());
  EXPECT_FALSE(r.query_param("show").has_value());
}

TEST(HttpRequest, QueryParamOnEmptyQuery) {
  Request r;
  EXPECT_FALSE(r.query_param("a").has_value());
  r.query = "&&";
  EXPECT_FALSE(r.query_param("").has_value());
}

TEST(HttpRequest, MediaType) {
  Request r;
  EXPECT_EQ(r.media_type(), "");
  r.headers.set("Content-Type", " Application/JSON ; charset=utf-8");
  EXPECT_EQ(r.media_type(), "application/json");
  r.headers.set("content-type", "multipart/form-data; boundary=x");
  EXPECT_EQ(r.media_type(), "multipart/form-data");
}

TEST(HttpMessage, UrlDecode) {
  EXPECT_EQ(url_decode("/a%20b", false), "/a b");
  EXPECT_EQ(url_decode("a+b", false), "a+b");
  EXPECT_EQ(url_decode("a+b", true), "a b");
  EXPECT_EQ(url_decode("%41%4a%4A", false), "AJJ");
  // Invalid escapes stay as they are.
  EXPECT_EQ(url_decode("100%", false), "100%");
  EXPECT_EQ(url_decode("%zz%4", false), "%zz%4");
  EXPECT_EQ(url_decode("%00x", false), std::string("\0x", 2));
}

TEST(HttpMessage, StatusReason) {
  EXPECT_STREQ(status_reason(200), "OK");
  EXPECT_STREQ(status_reason(404), "Not Found");
  EXPECT_STREQ(status_reason(413), "Payload Too Large");
  EXPECT_STREQ(status_reason(431), "Request Header Fields Too Large");
  EXPECT_STREQ(status_reason(503), "Service Unavailable");
  EXPECT_STRNE(status_reason(599), "");
}

}  // namespace
}  // namespace lemon::net
