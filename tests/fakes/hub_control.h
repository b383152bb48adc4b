// fake-hub's run-time control (the /_fake/* routes, README.md in this
// directory): the fault knobs (rules for file transfers and for listings),
// the request log, and the waits tests make on them instead of sleeping.
//
// Thread-safety: HubControl may be called from any thread; stall() and
// wait() block with its lock released, until the knobs change, the event
// happens, or stop().
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <httplib.h>

#include <nlohmann/json.hpp>

namespace fake::hub {

struct Rule {
  std::string path = "*";  // "org/name/file", "org/name" (listing knobs) or "*"
  int status = 0;
  std::optional<std::uint64_t> drop_after;
  bool corrupt = false;
  std::uint64_t bytes_per_sec = 0;
  std::optional<std::uint64_t> stall_after;
  std::int64_t times = -1;  // -1: unlimited
  int api_status = 0;
  std::optional<std::uint64_t> declared_size;
  std::vector<std::string> extra_siblings;

  // Listing rules shape the API answer; the others shape file transfers.
  bool is_listing_rule() const {
    return api_status != 0 || declared_size.has_value() || !extra_siblings.empty();
  }
  bool matches(const std::string& key) const { return path == "*" || path == key; }
};

// One rule of POST /_fake/knobs. Throws std::invalid_argument (unknown
// knobs, bad values) or nlohmann::json's errors (wrong types).
Rule parse_rule(const nlohmann::json& r);

// What the listing rules say about one repository.
struct ListingKnobs {
  int api_status = 0;
  std::optional<std::uint64_t> declared_size;               // every file
  std::map<std::string, std::uint64_t> file_declared_size;  // by repo-relative path
  std::vector<std::string> extra_siblings;
};

class HubControl {
 public:
  // -- knobs --

  void set_rules(std::vector<Rule> rules);
  // The first file rule for `key` (one of its `times` is used up), and the
  // knob generation it was taken in. A HEAD request only takes status rules.
  std::pair<std::optional<Rule>, std::uint64_t> take_file_rule(const std::string& key, bool head);
  // The listing knobs for `repo`; an api_status rule uses up one of its `times`.
  ListingKnobs listing_knobs(const std::string& repo);
  // Holds a transfer of `key` while the knobs stay at `generation`: true once
  // they change (the transfer goes on), false if the hub stops or the client
  // leaves first. Counts as "stalled" for /_fake/wait meanwhile.
  bool stall(const std::string& key, std::uint64_t generation,
             const std::function<bool()>& client_alive);

  // -- the log and the waits --

  // Records a request; returns its id for add_sent().
  std::uint64_t log_request(const httplib::Request& req, int status, const std::string& key);
  void add_sent(std::uint64_t id, std::int64_t n);
  nlohmann::json log();
  // Empties the log and restarts the request counts of /_fake/wait.
  void clear_log();
  // event "stalled": a transfer of `path` ("*": any) is stalled now.
  // event "request": `count` requests for `path` ("*": any) since the last clear.
  bool wait(const std::string& event, const std::string& path, std::int64_t count,
            std::chrono::milliseconds timeout);
  // Releases stalled transfers and waits, for good.
  void stop();

 private:
  struct LogEntry {
    std::string method;
    std::string path;
    std::string query;
    std::string range;
    bool authorization_present = false;
    std::uint64_t bytes_sent = 0;
    int status = 0;
    std::string key;  // "org/name/file", "org/name", or "" for other routes
  };

  std::mutex mu_;
  std::condition_variable cv_;  // the knobs, the log or the stalls changed, or stop()
  std::vector<Rule> rules_;
  std::uint64_t generation_ = 0;
  std::vector<LogEntry> log_;
  std::uint64_t log_base_ = 0;
  std::map<std::string, std::int64_t> request_counts_;
  std::map<std::string, int> stalled_;
  bool stopping_ = false;
};

}  // namespace fake::hub
