// The remote endpoints' circuit breaker and the order a request tries them
// in (remote/endpoint_health.h), without threads or sockets.
#include <gtest/gtest.h>

#include "lemon/remote/endpoint_health.h"

namespace lemon::remote {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const HealthClock::time_point kT0 = HealthClock::time_point() + std::chrono::hours(1);

TEST(RemoteEndpointHealth, AFailureTakesItDownUntilItsRetryTimeWhichDoubles) {
  EndpointHealth h;
  EXPECT_TRUE(usable(h, kT0));
  EXPECT_TRUE(record_failure(h, "refused", kT0));
  EXPECT_EQ(h.state, EndpointState::kDown);
  EXPECT_EQ(h.last_error, "refused");
  EXPECT_FALSE(usable(h, kT0 + milliseconds(999)));
  EXPECT_TRUE(usable(h, kT0 + seconds(1)));
  // Still down: the next failure waits 2 s, then 4 s.
  EXPECT_FALSE(record_failure(h, "refused", kT0 + seconds(1)));
  EXPECT_EQ(h.retry_at, kT0 + seconds(3));
  record_failure(h, "refused", kT0 + seconds(3));
  EXPECT_EQ(h.retry_at, kT0 + seconds(7));
}

TEST(RemoteEndpointHealth, TheBackoffStopsAtItsMaximum) {
  EndpointHealth h;
  const BreakerPolicy policy{milliseconds(1000), milliseconds(60000)};
  record_failure(h, "timeout", kT0, policy);
  for (int i = 0; i < 39; ++i) {
    record_failure(h, "timeout", h.retry_at, policy);  // each retry, at its time, fails
  }
  const auto last_try = h.retry_at;
  record_failure(h, "timeout", last_try, policy);
  EXPECT_EQ(h.retry_at, last_try + seconds(60));
  EXPECT_EQ(h.failures, 30);
}

TEST(RemoteEndpointHealth, FailuresOfTriesThatStartedBeforeItWentDownDoNotExtendTheWait) {
  EndpointHealth h;
  record_failure(h, "refused", kT0);
  // Seven more requests refused at the same moment: the same outage.
  for (int i = 0; i < 7; ++i) {
    EXPECT_FALSE(record_failure(h, "reset", kT0 + milliseconds(10)));
  }
  EXPECT_EQ(h.failures, 1);
  EXPECT_EQ(h.retry_at, kT0 + seconds(1));
  EXPECT_EQ(h.last_error, "reset");
}

TEST(RemoteEndpointHealth, ASuccessMakesItHealthyAtOnce) {
  EndpointHealth h;
  record_failure(h, "refused", kT0);
  record_failure(h, "refused", kT0);
  EXPECT_TRUE(record_success(h));
  EXPECT_EQ(h.state, EndpointState::kHealthy);
  EXPECT_EQ(h.failures, 0);
  EXPECT_TRUE(h.last_error.empty());
  EXPECT_FALSE(record_success(h));  // no change the second time
  record_failure(h, "refused", kT0 + seconds(10));
  EXPECT_EQ(h.retry_at, kT0 + seconds(11));  // the backoff starts over
}

TEST(RemoteEndpointOrder, FailoverTriesThemAsListedWithTheDownOnesLast) {
  std::vector<EndpointHealth> health(3);
  std::vector<EndpointLoad> load(3);
  EXPECT_EQ(endpoint_order(RemotePolicy::kFailover, health, load, kT0),
            (std::vector<std::size_t>{0, 1, 2}));
  record_failure(health[0], "refused", kT0);
  EXPECT_EQ(endpoint_order(RemotePolicy::kFailover, health, load, kT0),
            (std::vector<std::size_t>{1, 2, 0}));
  // Past its retry time it is first again (one trial).
  EXPECT_EQ(endpoint_order(RemotePolicy::kFailover, health, load, kT0 + seconds(1)),
            (std::vector<std::size_t>{0, 1, 2}));
}

TEST(RemoteEndpointOrder, DownEndpointsComeSoonestRetryFirst) {
  std::vector<EndpointHealth> health(2);
  std::vector<EndpointLoad> load(2);
  record_failure(health[0], "refused", kT0 + seconds(5));
  record_failure(health[1], "refused", kT0);
  EXPECT_EQ(endpoint_order(RemotePolicy::kFailover, health, load, kT0),
            (std::vector<std::size_t>{1, 0}));
}

TEST(RemoteEndpointOrder, LeastBusyCountsOurRequestsAndTheRemotesQueue) {
  std::vector<EndpointHealth> health(3);
  std::vector<EndpointLoad> load = {{2, std::nullopt}, {0, 3}, {1, std::nullopt}};
  EXPECT_EQ(endpoint_order(RemotePolicy::kLeastBusy, health, load, kT0),
            (std::vector<std::size_t>{2, 0, 1}));
  load[2].in_flight = 2;  // a tie with endpoint 0: as listed
  EXPECT_EQ(endpoint_order(RemotePolicy::kLeastBusy, health, load, kT0),
            (std::vector<std::size_t>{0, 2, 1}));
  record_failure(health[0], "refused", kT0);
  EXPECT_EQ(endpoint_order(RemotePolicy::kLeastBusy, health, load, kT0),
            (std::vector<std::size_t>{2, 1, 0}));
}

}  // namespace
}  // namespace lemon::remote
