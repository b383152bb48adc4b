// Error, Result and the ErrorCode helpers: stable names and which load
// failures evict-all-then-retry may fix.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "lemon/core/error.h"

namespace lemon {
namespace {

TEST(CoreError, NamesAreStableAndUnique) {
  std::set<std::string> names;
  for (ErrorCode c : kAllErrorCodes) {
    std::string n = error_code_name(c);
    EXPECT_FALSE(n.empty());
    EXPECT_TRUE(names.insert(n).second) << "duplicate name " << n;
    for (char ch : n) {
      EXPECT_TRUE((ch >= 'a' && ch <= 'z') || ch == '_') << n;
    }
  }
  EXPECT_STREQ(error_code_name(ErrorCode::kModelFilesMissing), "model_files_missing");
  EXPECT_STREQ(error_code_name(ErrorCode::kBackendStartTimeout), "backend_start_timeout");
  EXPECT_STREQ(error_code_name(ErrorCode::kInvalidUserArgs), "invalid_user_args");
  EXPECT_STREQ(error_code_name(ErrorCode::kUnsupportedMediaType), "unsupported_media_type");
}

TEST(CoreError, OnlyResourceLikeLoadFailuresAreRetryable) {
  std::set<ErrorCode> retryable;
  for (ErrorCode c : kAllErrorCodes) {
    if (is_retryable_load_failure(c)) {
      retryable.insert(c);
    }
  }
  EXPECT_EQ(retryable,
            (std::set<ErrorCode>{ErrorCode::kBackendExited, ErrorCode::kBackendStartTimeout,
                                 ErrorCode::kBackendLoadStalled, ErrorCode::kSpawnFailed,
                                 ErrorCode::kOutOfMemory}));
  // Spelled out: a retry cannot fix these.
  for (ErrorCode c :
       {ErrorCode::kModelFilesMissing, ErrorCode::kInvalidUserArgs, ErrorCode::kUnknownRecipe,
        ErrorCode::kBackendBinaryMissing, ErrorCode::kInvalidOption}) {
    EXPECT_FALSE(is_retryable_load_failure(c)) << error_code_name(c);
  }
}

TEST(CoreError, CarriesMessageParamDetailAndUpstreamStatus) {
  Error e = Error(ErrorCode::kBackendExited, "exited", "model")
                .with_detail("tail")
                .with_upstream_status(502);
  EXPECT_EQ(e.code(), ErrorCode::kBackendExited);
  EXPECT_EQ(e.message(), "exited");
  EXPECT_EQ(e.param(), "model");
  EXPECT_EQ(e.detail(), "tail");
  EXPECT_EQ(e.upstream_status(), 502);

  Error plain(ErrorCode::kInternal, "x");
  EXPECT_EQ(plain.param(), "");
  EXPECT_EQ(plain.detail(), "");
  EXPECT_EQ(plain.upstream_status(), std::nullopt);
}

TEST(CoreError, ResultHoldsValueOrError) {
  Result<int> v = 7;
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(static_cast<bool>(v));
  EXPECT_EQ(*v, 7);
  Result<int> e = Error(ErrorCode::kInvalidRequest, "bad");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code(), ErrorCode::kInvalidRequest);

  Status ok = ok_status();
  EXPECT_TRUE(ok.ok());
  Status failed = Error(ErrorCode::kCancelled, "gone");
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message(), "gone");
}

}  // namespace
}  // namespace lemon
