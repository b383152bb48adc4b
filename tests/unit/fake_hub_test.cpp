// The fake Hugging Face hub itself (tests/fakes/fake_hub.cpp through
// tests/support/fake_hub.h): listing shapes and hashes, the CDN redirect,
// ranges, gated repositories, fault knobs and the request log. Every wait is
// on a signal from the hub (/_fake/wait), never a sleep.
#include "support/fake_hub.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "lemon/download/checksum.h"

namespace lemon::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr char kRepo[] = "org/m";
constexpr char kRand[] = "org/m/rand.bin";
constexpr std::uint64_t kRandSize = 100000;
// git hash-object and sha256sum of "hello\n".
constexpr char kHelloBlobId[] = "ce013625030ba8dba906f756967f9e9ca394464a";
constexpr char kHelloSha256[] = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

std::string served_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string sha256_of_file(const std::string& path) {
  auto h = download::hash_file(path, download::Checksum::Kind::kSha256);
  return h.ok() ? *h : std::string();
}

bool is_hex(const std::string& s, std::size_t n) {
  return s.size() == n && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

class FakeHubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    hub_.add_file(kRepo, "hello.txt", "hello\n");
    hub_.add_file(kRepo, "sub/dir/w.gguf", "hello\n");
    rand_path_ = hub_.add_random_file(kRepo, "rand.bin", kRandSize, 7);
    rand_ = served_text(rand_path_);
    hub_.add_file(kRepo, ".hidden", "the hub's own file, not the repository's");
    ASSERT_EQ(rand_.size(), kRandSize);
    ASSERT_TRUE(hub_.start());
  }

  httplib::Client client(bool follow = false) const {
    httplib::Client c("127.0.0.1", hub_.port());
    c.set_connection_timeout(5, 0);
    c.set_read_timeout(30, 0);
    c.set_follow_location(follow);
    return c;
  }

  json get_json(const std::string& path, const httplib::Headers& headers = {}) const {
    auto r = client().Get(path, headers);
    if (!r || r->status != 200) {
      ADD_FAILURE() << path << ": " << (r ? std::to_string(r->status) : "no answer");
      return json::object();
    }
    return json::parse(r->body);
  }

  std::string commit() const { return hub_.listing(kRepo)["sha"].get<std::string>(); }
  std::string cdn(const std::string& rel) const {
    return "/_cdn/" + std::string(kRepo) + "/" + commit() + "/" + rel;
  }

  static json sibling(const json& listing, const std::string& rel) {
    for (const json& s : listing["siblings"]) {
      if (s["rfilename"] == rel) {
        return s;
      }
    }
    ADD_FAILURE() << "no sibling " << rel << " in " << listing.dump();
    return json::object();
  }

  FakeHub hub_;
  std::string rand_path_;
  std::string rand_;
};

TEST_F(FakeHubTest, ListingWithoutBlobsNamesTheFiles) {
  json j = get_json("/api/models/org/m");
  EXPECT_EQ(j["id"], kRepo);
  EXPECT_EQ(j["modelId"], kRepo);
  EXPECT_TRUE(j["_id"].is_string());
  EXPECT_EQ(j["private"], false);
  EXPECT_EQ(j["gated"], false);
  ASSERT_TRUE(j["sha"].is_string());
  const std::string sha = j["sha"].get<std::string>();
  EXPECT_TRUE(is_hex(sha, 40)) << sha;
  // Sorted, nested paths included, the root dot-file left out, no blob fields.
  EXPECT_EQ(j["siblings"], (json{{{"rfilename", "hello.txt"}},
                                 {{"rfilename", "rand.bin"}},
                                 {{"rfilename", "sub/dir/w.gguf"}}}));

  EXPECT_EQ(get_json("/api/models/org/m/revision/main")["sha"], sha);
  EXPECT_EQ(get_json("/api/models/org/m/revision/" + sha)["sha"], sha);
  auto c = client();
  auto dev = c.Get("/api/models/org/m/revision/dev");
  ASSERT_TRUE(dev);
  EXPECT_EQ(dev->status, 404);

  auto missing = c.Get("/api/models/org/none");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->get_header_value("X-Error-Code"), "RepoNotFound");
  EXPECT_EQ(json::parse(missing->body), (json{{"error", "Repository not found"}}));
}

TEST_F(FakeHubTest, ListingWithBlobsHasGitBlobIdsSizesAndLfs) {
  json j = get_json("/api/models/org/m?blobs=true");
  EXPECT_EQ(sibling(j, "hello.txt"),
            (json{{"rfilename", "hello.txt"}, {"blobId", kHelloBlobId}, {"size", 6}}));
  EXPECT_EQ(sibling(j, "sub/dir/w.gguf"),
            (json{{"rfilename", "sub/dir/w.gguf"},
                  {"blobId", kHelloBlobId},
                  {"size", 6},
                  {"lfs", {{"sha256", kHelloSha256}, {"size", 6}, {"pointerSize", 134}}}}));
  json rand = sibling(j, "rand.bin");
  EXPECT_EQ(rand["size"], kRandSize);
  EXPECT_TRUE(is_hex(rand["blobId"].get<std::string>(), 40));
  EXPECT_EQ(rand["lfs"]["sha256"], sha256_of_file(rand_path_));
  EXPECT_EQ(rand["lfs"]["size"], kRandSize);

  // Over 10 MiB, any name is LFS; a new or changed file makes a new commit.
  const std::string before = j["sha"].get<std::string>();
  const std::string big = hub_.add_random_file(kRepo, "big.txt", (10u << 20) + 1, 3);
  json with_big = get_json("/api/models/org/m?blobs=true");
  EXPECT_EQ(sibling(with_big, "big.txt")["lfs"]["sha256"], sha256_of_file(big));
  EXPECT_NE(with_big["sha"], before);
  hub_.add_file(kRepo, "hello.txt", "hello, again\n");
  json changed = get_json("/api/models/org/m?blobs=true");
  EXPECT_NE(changed["sha"], with_big["sha"]);
  EXPECT_NE(sibling(changed, "hello.txt")["blobId"], kHelloBlobId);
}

TEST_F(FakeHubTest, ResolveRedirectsLfsFilesToTheCdnAndServesOthers) {
  const std::string sha = commit();
  auto c = client();
  auto hop = c.Get("/org/m/resolve/main/sub/dir/w.gguf");
  ASSERT_TRUE(hop);
  EXPECT_EQ(hop->status, 302);
  EXPECT_EQ(hop->get_header_value("Location"),
            hub_.endpoint() + "/_cdn/org/m/" + sha + "/sub/dir/w.gguf");
  EXPECT_EQ(hop->get_header_value("X-Repo-Commit"), sha);
  EXPECT_EQ(hop->get_header_value("X-Linked-Etag"), "\"" + std::string(kHelloSha256) + "\"");
  EXPECT_EQ(hop->get_header_value("X-Linked-Size"), "6");

  auto followed = client(true).Get("/org/m/resolve/" + sha + "/sub/dir/w.gguf");
  ASSERT_TRUE(followed);
  EXPECT_EQ(followed->status, 200);
  EXPECT_EQ(followed->body, "hello\n");

  auto direct = c.Get("/org/m/resolve/main/hello.txt");
  ASSERT_TRUE(direct);
  EXPECT_EQ(direct->status, 200);
  EXPECT_EQ(direct->body, "hello\n");
  EXPECT_EQ(direct->get_header_value("ETag"), "\"" + std::string(kHelloBlobId) + "\"");
  EXPECT_EQ(direct->get_header_value("X-Repo-Commit"), sha);
  auto head = c.Head("/org/m/resolve/main/hello.txt");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->get_header_value("Content-Length"), "6");

  auto missing = c.Get("/org/m/resolve/main/nope.gguf");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->get_header_value("X-Error-Code"), "EntryNotFound");
  auto bad_rev = c.Get("/org/m/resolve/dev/hello.txt");
  ASSERT_TRUE(bad_rev);
  EXPECT_EQ(bad_rev->status, 404);
}

TEST_F(FakeHubTest, TheCdnServesRanges) {
  const std::string path = cdn("rand.bin");
  auto c = client();
  auto all = c.Get(path);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->status, 200);
  EXPECT_EQ(all->body, rand_);
  EXPECT_EQ(all->get_header_value("Content-Length"), std::to_string(kRandSize));
  EXPECT_EQ(all->get_header_value("Accept-Ranges"), "bytes");
  EXPECT_EQ(all->get_header_value("ETag"), "\"" + sha256_of_file(rand_path_) + "\"");

  auto tail = c.Get(path, {{"Range", "bytes=1000-"}});
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->status, 206);
  EXPECT_EQ(tail->get_header_value("Content-Range"), "bytes 1000-99999/100000");
  EXPECT_EQ(tail->body, rand_.substr(1000));

  auto middle = c.Get(path, {{"Range", "bytes=10-19"}});
  ASSERT_TRUE(middle);
  EXPECT_EQ(middle->status, 206);
  EXPECT_EQ(middle->get_header_value("Content-Range"), "bytes 10-19/100000");
  EXPECT_EQ(middle->body, rand_.substr(10, 10));

  auto past = c.Get(path, {{"Range", "bytes=100000-"}});
  ASSERT_TRUE(past);
  EXPECT_EQ(past->status, 416);
  EXPECT_EQ(past->get_header_value("Content-Range"), "bytes */100000");
  EXPECT_TRUE(past->body.empty());
}

TEST_F(FakeHubTest, GatedReposAnswer401WithoutTheTokenAnd403WithAWrongOne) {
  hub_.set_token("org/g", "secret");
  hub_.add_file("org/g", "g.gguf", "gated weights");
  const httplib::Headers good = {{"Authorization", "Bearer secret"}};
  json listing = get_json("/api/models/org/g?blobs=true", good);
  EXPECT_EQ(listing["gated"], "auto");
  EXPECT_EQ(listing["siblings"].size(), 1u) << ".fake.json is not a repository file";
  const std::string sha = listing["sha"].get<std::string>();

  auto c = client();
  const std::vector<std::string> paths = {"/api/models/org/g", "/org/g/resolve/main/g.gguf",
                                          "/_cdn/org/g/" + sha + "/g.gguf"};
  for (const std::string& path : paths) {
    auto none = c.Get(path);
    ASSERT_TRUE(none) << path;
    EXPECT_EQ(none->status, 401) << path;
    EXPECT_NE(json::parse(none->body)["error"].get<std::string>().find(
                  "Access to model org/g is restricted"),
              std::string::npos);
    auto wrong = c.Get(path, {{"Authorization", "Bearer nope"}});
    ASSERT_TRUE(wrong) << path;
    EXPECT_EQ(wrong->status, 403) << path;
    auto right = c.Get(path, good);
    ASSERT_TRUE(right) << path;
    EXPECT_EQ(right->status, path.starts_with("/org/") ? 302 : 200) << path;
  }
}

TEST_F(FakeHubTest, DropAfterBytesClosesTheConnectionEarly) {
  const std::string path = cdn("rand.bin");
  hub_.set_knobs({{{"path", kRand}, {"drop_after_bytes", 1000}, {"times", 1}}});
  hub_.clear_log();
  std::string got;
  auto c = client();
  auto dropped = c.Get(path, [&](const char* data, std::size_t n) {
    got.append(data, n);
    return true;
  });
  EXPECT_FALSE(dropped) << "the body ended early";
  EXPECT_EQ(got, rand_.substr(0, 1000));
  json log = hub_.log();
  ASSERT_EQ(log.size(), 1u) << log.dump();
  EXPECT_EQ(log[0]["status"], 200);
  EXPECT_EQ(log[0]["bytes_sent"], 1000);

  // `times` is used up: the next request gets everything.
  auto again = client().Get(path);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->body, rand_);
}

TEST_F(FakeHubTest, AStallHoldsTheTransferUntilTheKnobsChange) {
  const std::string path = cdn("rand.bin");
  hub_.set_knobs({{{"path", kRand}, {"stall_after_bytes", 4096}}});
  hub_.clear_log();
  auto transfer = std::async(std::launch::async, [this, path] {
    auto r = client().Get(path);
    return r ? r->body : std::string("(failed)");
  });
  const bool stalled = hub_.wait_stalled(kRand);
  EXPECT_TRUE(stalled);
  json log = hub_.log();
  EXPECT_EQ(log.size(), 1u) << log.dump();
  if (!log.empty()) {
    EXPECT_EQ(log[0]["bytes_sent"], 4096);
  }
  EXPECT_FALSE(hub_.wait_stalled("org/m/hello.txt", 50ms)) << "only that file stalls";

  hub_.set_knobs(json::array());  // releases it: the rest follows
  EXPECT_EQ(transfer.get(), rand_);
  EXPECT_EQ(hub_.log()[0]["bytes_sent"], kRandSize);
}

TEST_F(FakeHubTest, TheLogRecordsRangeQueryAndAuthorizationAndCountsRequests) {
  const std::string path = cdn("rand.bin");
  hub_.clear_log();
  auto c = client();
  ASSERT_TRUE(c.Get("/api/models/org/m?blobs=true"));
  auto part = c.Get(path, {{"Range", "bytes=5-"}, {"Authorization", "Bearer x"}});
  ASSERT_TRUE(part);
  EXPECT_EQ(part->status, 206);
  EXPECT_EQ(hub_.log(), (json{{{"method", "GET"},
                               {"path", "/api/models/org/m"},
                               {"query", "blobs=true"},
                               {"range", ""},
                               {"authorization_present", false},
                               {"bytes_sent", 0},
                               {"status", 200}},
                              {{"method", "GET"},
                               {"path", path},
                               {"query", ""},
                               {"range", "bytes=5-"},
                               {"authorization_present", true},
                               {"bytes_sent", kRandSize - 5},
                               {"status", 206}}}));
  EXPECT_TRUE(hub_.wait_requests(kRepo, 1));
  EXPECT_TRUE(hub_.wait_requests(kRand, 1));
  EXPECT_FALSE(hub_.wait_requests(kRand, 2, 50ms));
  hub_.clear_log();
  EXPECT_TRUE(hub_.log().empty());
  EXPECT_FALSE(hub_.wait_requests(kRand, 1, 50ms)) << "counts restart with the log";
}

TEST_F(FakeHubTest, StatusAndCorruptKnobs) {
  hub_.set_knobs({{{"path", "org/m/hello.txt"}, {"status", 500}, {"times", 1}}});
  auto c = client();
  auto failed = c.Get("/org/m/resolve/main/hello.txt");
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, 500);
  auto ok = c.Get("/org/m/resolve/main/hello.txt");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);

  hub_.set_knobs({{{"path", kRand}, {"corrupt", true}}});
  const std::string path = cdn("rand.bin");
  for (std::uint64_t first : {std::uint64_t{0}, std::uint64_t{50000}}) {
    auto r = c.Get(path, {{"Range", "bytes=" + std::to_string(first) + "-"}});
    ASSERT_TRUE(r);
    const std::string expected = rand_.substr(first);
    ASSERT_EQ(r->body.size(), expected.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      differ += r->body[i] != expected[i] ? 1 : 0;
    }
    EXPECT_EQ(differ, 1u);
    EXPECT_NE(r->body[expected.size() / 2], expected[expected.size() / 2]);
  }
  EXPECT_EQ(sibling(hub_.listing(kRepo), "rand.bin")["lfs"]["sha256"], sha256_of_file(rand_path_))
      << "the listing keeps the true hash";
}

TEST_F(FakeHubTest, ListingKnobs) {
  hub_.set_knobs({{{"path", kRepo}, {"api_status", 500}, {"times", 1}},
                  {{"path", kRand}, {"declared_size", 123}},
                  {{"path", kRepo}, {"extra_siblings", {"../../escape.gguf", "/abs.gguf"}}}});
  auto c = client();
  auto failed = c.Get("/api/models/org/m?blobs=true");
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, 500);
  json j = get_json("/api/models/org/m?blobs=true");
  EXPECT_EQ(sibling(j, "rand.bin")["size"], 123);
  EXPECT_EQ(sibling(j, "rand.bin")["lfs"]["size"], 123);
  EXPECT_EQ(sibling(j, "hello.txt")["size"], 6);
  EXPECT_EQ(sibling(j, "../../escape.gguf")["rfilename"], "../../escape.gguf");
  EXPECT_EQ(sibling(j, "/abs.gguf")["rfilename"], "/abs.gguf");
  for (const std::string path :
       {"/org/m/resolve/main/../../escape.gguf", "/org/m/resolve/main//abs.gguf"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 404) << path;
  }

  auto bad =
      c.Post("/_fake/knobs", R"({"rules":[{"path":"org/m","bogus":1}]})", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("bogus"), std::string::npos) << bad->body;
}

}  // namespace
}  // namespace lemon::testing
