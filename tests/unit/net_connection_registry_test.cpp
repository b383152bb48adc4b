// choose_victim: which connection is closed to make room (issue #11 §3a), as
// a pure function over the open connections.
#include "../../src/net/connection_registry.h"

#include <gtest/gtest.h>

#include <vector>

namespace lemon::net::detail {
namespace {

using Clock = std::chrono::steady_clock;

OpenConnection conn(std::uint64_t id, const char* address, bool busy, int idle_since_s) {
  return OpenConnection{id, address, busy, Clock::time_point(std::chrono::seconds(idle_since_s))};
}

TEST(ConnectionAdmission, BelowBothLimitsAdmits) {
  std::vector<OpenConnection> open = {conn(1, "a", false, 1)};
  auto d = choose_victim(open, "a", {4, 2});
  EXPECT_EQ(d.what, Admission::kAdmit);
}

TEST(ConnectionAdmission, AtTheAddressLimitTheOldestIdleOfThatAddressGoes) {
  std::vector<OpenConnection> open = {conn(1, "b", false, 0),  // older, but another address
                                      conn(2, "a", false, 5), conn(3, "a", false, 3),
                                      conn(4, "a", true, 1)};  // oldest of a, but busy
  auto d = choose_victim(open, "a", {100, 3});
  EXPECT_EQ(d.what, Admission::kEvictThenAdmit);
  EXPECT_EQ(d.victim, 3u);
}

TEST(ConnectionAdmission, AtTheTotalLimitTheOldestIdleOfAnyAddressGoes) {
  std::vector<OpenConnection> open = {conn(1, "a", false, 7), conn(2, "b", false, 2),
                                      conn(3, "c", true, 0)};
  auto d = choose_victim(open, "d", {3, 10});
  EXPECT_EQ(d.what, Admission::kEvictThenAdmit);
  EXPECT_EQ(d.victim, 2u);
}

TEST(ConnectionAdmission, AtTheTotalWithEveryoneBusyTheNewcomerIsRefused) {
  std::vector<OpenConnection> open = {conn(1, "a", true, 0), conn(2, "a", true, 1)};
  EXPECT_EQ(choose_victim(open, "a", {2, 10}).what, Admission::kRefuse);
}

TEST(ConnectionAdmission, TheAddressLimitBoundsIdleSocketsNotWork) {
  // Its own connections all busy: admitted below the total.
  std::vector<OpenConnection> busy = {conn(1, "a", true, 0), conn(2, "b", false, 0)};
  EXPECT_EQ(choose_victim(busy, "a", {10, 1}).what, Admission::kAdmit);
  // ... and at the total, another address's idle connection makes room.
  auto d = choose_victim(busy, "a", {2, 1});
  EXPECT_EQ(d.what, Admission::kEvictThenAdmit);
  EXPECT_EQ(d.victim, 2u);
}

TEST(ConnectionAdmission, TiesGoToTheEarlierConnection) {
  std::vector<OpenConnection> open = {conn(9, "a", false, 4), conn(5, "a", false, 4)};
  auto d = choose_victim(open, "a", {2, 10});
  EXPECT_EQ(d.victim, 5u);
}

}  // namespace
}  // namespace lemon::net::detail
