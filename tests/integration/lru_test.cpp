// Per-type LRU slots (issue #2 §7.2): the least recently used server of the
// type being loaded is evicted and its process exits; other types keep their
// own slots; the list form of --max-loaded-models sets each type's limit.
#include <gtest/gtest.h>

#include "support/http_client.h"
#include "support/process_watch.h"
#include "support/router_fixture.h"

namespace lemon::testing {
namespace {

class LruTest : public RouterTest {
 protected:
  // Two LLM slots and three LLMs, m1..m3, of which m1 and then m2 are loaded;
  // their backends' pids go to m1_ and m2_.
  void start_with_m1_and_m2_loaded() {
    env_.add_llm("m1");
    env_.add_llm("m2");
    env_.add_llm("m3");
    ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "2"}));
    ASSERT_NO_FATAL_FAILURE(load_ok("user.m1", &m1_));
    ASSERT_NO_FATAL_FAILURE(load_ok("user.m2", &m2_));
  }

  int m1_ = -1;
  int m2_ = -1;
};

// Lemonade's test_021: load m1, load m2, chat with m2, load m3.
TEST_F(LruTest, LoadingAThirdLlmEvictsTheLeastRecentlyUsed) {
  ASSERT_NO_FATAL_FAILURE(start_with_m1_and_m2_loaded());
  ASSERT_GT(m1_, 0);
  ASSERT_GT(m2_, 0);
  ASSERT_EQ(chat(port(), "user.m2").status, 200);
  PidWatch m1_watch(m1_);

  ASSERT_NO_FATAL_FAILURE(load_ok("user.m3"));
  auto h = health(port());
  EXPECT_EQ(loaded_names(h), (Names{"user.m2", "user.m3"}));
  EXPECT_EQ(loaded_field(h, "user.m2", "pid"), m2_);
  EXPECT_TRUE(m1_watch.wait_exit(kWait)) << "the evicted backend is still running";
  EXPECT_TRUE(router().wait_for_log("evicting 'user.m1' (slot_limit)"));
}

TEST_F(LruTest, ChatRefreshesTheLruClock) {
  ASSERT_NO_FATAL_FAILURE(start_with_m1_and_m2_loaded());
  ASSERT_EQ(chat(port(), "user.m1").status, 200);  // m2 is now the least recently used
  PidWatch m2_watch(m2_);

  // Auto-load through chat evicts like an explicit load.
  ASSERT_EQ(chat(port(), "user.m3").status, 200);
  auto h = health(port());
  EXPECT_EQ(loaded_names(h), (Names{"user.m1", "user.m3"}));
  EXPECT_EQ(loaded_field(h, "user.m1", "pid"), m1_);
  EXPECT_TRUE(m2_watch.wait_exit(kWait)) << "the evicted backend is still running";
}

TEST_F(LruTest, AnEmbeddingModelDoesNotEvictLlms) {
  env_.add_llm("l1");
  env_.add_llm("l2");
  env_.add_embedding("e1");
  ASSERT_NO_FATAL_FAILURE(start_router());  // one model of each type
  pid_t l1 = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.l1", &l1));
  pid_t e1 = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.e1", &e1));
  auto h = health(port());
  EXPECT_EQ(loaded_names(h), (Names{"user.e1", "user.l1"}));
  EXPECT_EQ(loaded_field(h, "user.e1", "type"), "embedding");
  EXPECT_EQ(loaded_field(h, "user.l1", "pid"), l1);

  // The next LLM takes the LLM slot; the embedding model stays.
  PidWatch l1_watch(l1);
  ASSERT_NO_FATAL_FAILURE(load_ok("user.l2"));
  h = health(port());
  EXPECT_EQ(loaded_names(h), (Names{"user.e1", "user.l2"}));
  EXPECT_EQ(loaded_field(h, "user.e1", "pid"), e1);
  EXPECT_TRUE(l1_watch.wait_exit(kWait));
}

TEST_F(LruTest, ListFormSetsALimitPerType) {
  env_.add_llm("l1");
  env_.add_llm("l2");
  env_.add_embedding("e1");
  env_.add_embedding("e2");
  env_.add_embedding("e3");
  ASSERT_NO_FATAL_FAILURE(start_router({"--max-loaded-models", "1", "2"}));
  EXPECT_EQ(health(port())["max_models"], (nlohmann::json{{"llm", 1},
                                                          {"embedding", 2},
                                                          {"reranking", 1},
                                                          {"audio", 1},
                                                          {"image", 1},
                                                          {"transcription", 1}}));

  pid_t e1 = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.e1", &e1));
  pid_t e2 = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.e2", &e2));
  pid_t l1 = 0;
  ASSERT_NO_FATAL_FAILURE(load_ok("user.l1", &l1));
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.e1", "user.e2", "user.l1"}));

  PidWatch e1_watch(e1);
  ASSERT_NO_FATAL_FAILURE(load_ok("user.e3"));
  auto h = health(port());
  EXPECT_EQ(loaded_names(h), (Names{"user.e2", "user.e3", "user.l1"}));
  EXPECT_EQ(loaded_field(h, "user.e2", "pid"), e2);
  EXPECT_EQ(loaded_field(h, "user.l1", "pid"), l1);
  EXPECT_TRUE(e1_watch.wait_exit(kWait));

  PidWatch l1_watch(l1);
  ASSERT_NO_FATAL_FAILURE(load_ok("user.l2"));
  EXPECT_EQ(loaded_names(health(port())), (Names{"user.e2", "user.e3", "user.l2"}));
  EXPECT_TRUE(l1_watch.wait_exit(kWait));
}

}  // namespace
}  // namespace lemon::testing
