// Per-key limits (key_limits.h): the rate is a token bucket, a pure
// function of time; requests at once are leases.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "lemon/http/audit_log.h"
#include "lemon/http/key_limits.h"
#include "support/temp_dir.h"

namespace lemon::http {
namespace {

TEST(RateBucket, AMinutesAllowancePassesThenOneEverySixtyOverRateSeconds) {
  RateBucket b;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(take_request(b, 3, 1000), 0) << i;
  }
  const std::int64_t wait = take_request(b, 3, 1000);
  EXPECT_EQ(wait, 20'000) << "one token comes back every 20 s at 3 a minute";
  EXPECT_EQ(take_request(b, 3, 1000 + 19'999), 1);
  EXPECT_EQ(take_request(b, 3, 1000 + 20'000), 0);
  EXPECT_GT(take_request(b, 3, 1000 + 20'000), 0);
  EXPECT_EQ(take_request(b, 3, 1000 + 20'000 + 600'000), 0) << "refilled after a long pause";
  EXPECT_EQ(take_request(b, 3, 1000 + 20'000 + 600'000), 0);
  EXPECT_EQ(take_request(b, 3, 1000 + 20'000 + 600'000), 0);
  EXPECT_GT(take_request(b, 3, 1000 + 20'000 + 600'000), 0) << "never above the allowance";
  RateBucket unlimited;
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(take_request(unlimited, 0, 0), 0);
  }
}

TEST(KeyLimiter, RequestsAtOnceAreLeasesAndARefusalSaysWhenToComeBack) {
  KeyLimiter limiter;
  ApiKey key;
  key.name = "k";
  key.max_concurrent = 2;
  auto a = limiter.admit(key, 0);
  auto b = limiter.admit(key, 0);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(limiter.in_flight("k"), 2);
  auto c = limiter.admit(key, 0);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), ErrorCode::kRateLimited);
  EXPECT_EQ(c.error().retry_after(), 1);
  EXPECT_NE(c.error().message().find("max_concurrent"), std::string::npos);
  { auto done = std::move(*a); }
  EXPECT_EQ(limiter.in_flight("k"), 1);
  EXPECT_TRUE(limiter.admit(key, 0).ok()) << "a lease that ended makes room";
  EXPECT_EQ(limiter.in_flight("k"), 1) << "the temporary's lease ended too";
}

TEST(KeyLimiter, TheRateIsPerKeyAndItsRetryAfterIsInSeconds) {
  KeyLimiter limiter;
  ApiKey slow;
  slow.name = "slow";
  slow.requests_per_minute = 2;
  ApiKey other;
  other.name = "other";
  other.requests_per_minute = 2;
  EXPECT_TRUE(limiter.admit(slow, 0).ok());
  EXPECT_TRUE(limiter.admit(slow, 0).ok());
  auto refused = limiter.admit(slow, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().retry_after(), 30);
  EXPECT_NE(refused.error().message().find("requests_per_minute"), std::string::npos);
  EXPECT_TRUE(limiter.admit(other, 0).ok()) << "another key has its own bucket";
  EXPECT_TRUE(limiter.admit(slow, 30'000).ok());
}

TEST(AuditLog, AppendsLinesAndRotates) {
  testing::TempDir dir("lemon-audit");
  const auto file = dir.path() / "logs" / "audit.jsonl";
  AuditLog log(file, 200, 2);
  for (int i = 0; i < 12; ++i) {
    log.record({{"n", i}, {"key", "ops"}, {"path", "/api/v1/load"}});
  }
  auto lines_of = [](const std::filesystem::path& p) {
    std::ifstream in(p);
    std::vector<nlohmann::json> out;
    for (std::string line; std::getline(in, line);) {
      out.push_back(nlohmann::json::parse(line));
    }
    return out;
  };
  const auto now = lines_of(file);
  const auto one = lines_of(file.string() + ".1");
  ASSERT_FALSE(now.empty());
  ASSERT_FALSE(one.empty());
  EXPECT_EQ(now.back()["n"], 11);
  EXPECT_EQ(one.back()["n"].get<int>() + 1, now.front()["n"].get<int>())
      << "rotation keeps the order";
  EXPECT_LE(std::filesystem::file_size(file), 200u);
  EXPECT_FALSE(std::filesystem::exists(file.string() + ".3")) << "keep = 2";
}

}  // namespace
}  // namespace lemon::http
