#include "hub_control.h"

#include <set>
#include <stdexcept>

namespace fake::hub {
namespace {

using json = nlohmann::json;

constexpr auto kStallPoll = std::chrono::milliseconds(10);

int http_status(const json& v, const char* name) {
  int s = v.get<int>();
  if (s < 100 || s > 599) {
    throw std::invalid_argument(std::string(name) + " must be an HTTP status");
  }
  return s;
}

std::string raw_query(const httplib::Request& req) {
  std::size_t q = req.target.find('?');
  return q == std::string::npos ? std::string() : req.target.substr(q + 1);
}

}  // namespace

Rule parse_rule(const json& r) {
  if (!r.is_object()) {
    throw std::invalid_argument("a rule must be a JSON object");
  }
  static const std::set<std::string> kKeys = {
      "path",  "status",     "drop_after_bytes",  "corrupt",       "bytes_per_sec",
      "times", "api_status", "stall_after_bytes", "declared_size", "extra_siblings"};
  for (const auto& item : r.items()) {
    if (kKeys.count(item.key()) == 0) {
      throw std::invalid_argument("unknown knob '" + item.key() + "'");
    }
  }
  Rule rule;
  rule.path = r.value("path", std::string("*"));
  if (r.contains("status")) {
    rule.status = http_status(r["status"], "status");
  }
  if (r.contains("api_status")) {
    rule.api_status = http_status(r["api_status"], "api_status");
  }
  if (r.contains("drop_after_bytes")) {
    rule.drop_after = r["drop_after_bytes"].get<std::uint64_t>();
  }
  if (r.contains("stall_after_bytes")) {
    rule.stall_after = r["stall_after_bytes"].get<std::uint64_t>();
  }
  if (r.contains("declared_size")) {
    rule.declared_size = r["declared_size"].get<std::uint64_t>();
  }
  rule.corrupt = r.value("corrupt", false);
  rule.bytes_per_sec = r.value("bytes_per_sec", std::uint64_t{0});
  if (r.contains("times")) {
    rule.times = r["times"].get<std::int64_t>();
    if (rule.times < 0) {
      throw std::invalid_argument("times must be >= 0");
    }
  }
  if (r.contains("extra_siblings")) {
    rule.extra_siblings = r["extra_siblings"].get<std::vector<std::string>>();
  }
  return rule;
}

void HubControl::set_rules(std::vector<Rule> rules) {
  std::lock_guard lock(mu_);
  rules_ = std::move(rules);
  ++generation_;
  cv_.notify_all();
}

std::pair<std::optional<Rule>, std::uint64_t> HubControl::take_file_rule(const std::string& key,
                                                                         bool head) {
  std::lock_guard lock(mu_);
  for (Rule& r : rules_) {
    if (r.is_listing_rule() || !r.matches(key) || r.times == 0 || (head && r.status == 0)) {
      continue;
    }
    if (r.times > 0) {
      --r.times;
    }
    return {r, generation_};
  }
  return {std::nullopt, generation_};
}

ListingKnobs HubControl::listing_knobs(const std::string& repo) {
  std::lock_guard lock(mu_);
  ListingKnobs k;
  for (Rule& r : rules_) {
    if (!r.is_listing_rule() || r.times == 0) {
      continue;
    }
    if (r.path.starts_with(repo + "/")) {
      if (r.declared_size) {
        k.file_declared_size.emplace(r.path.substr(repo.size() + 1), *r.declared_size);
      }
      continue;
    }
    if (!r.matches(repo)) {
      continue;
    }
    if (r.api_status != 0 && k.api_status == 0) {
      k.api_status = r.api_status;
      if (r.times > 0) {
        --r.times;
      }
    }
    if (r.declared_size && !k.declared_size) {
      k.declared_size = r.declared_size;
    }
    k.extra_siblings.insert(k.extra_siblings.end(), r.extra_siblings.begin(),
                            r.extra_siblings.end());
  }
  return k;
}

bool HubControl::stall(const std::string& key, std::uint64_t generation,
                       const std::function<bool()>& client_alive) {
  std::unique_lock lock(mu_);
  if (generation_ != generation) {
    return true;
  }
  ++stalled_[key];
  cv_.notify_all();
  bool released = false;
  for (;;) {
    if (generation_ != generation) {
      released = true;
      break;
    }
    if (stopping_) {
      break;
    }
    lock.unlock();
    const bool alive = client_alive();
    lock.lock();
    if (!alive) {
      break;
    }
    cv_.wait_for(lock, kStallPoll, [&] { return generation_ != generation || stopping_; });
  }
  if (--stalled_[key] == 0) {
    stalled_.erase(key);
  }
  return released;
}

std::uint64_t HubControl::log_request(const httplib::Request& req, int status,
                                      const std::string& key) {
  LogEntry e;
  e.method = req.method;
  e.path = req.path;
  e.query = raw_query(req);
  e.range = req.get_header_value("Range");
  e.authorization_present = req.has_header("Authorization");
  e.status = status;
  e.key = key;
  std::lock_guard lock(mu_);
  log_.push_back(std::move(e));
  ++request_counts_[key];
  cv_.notify_all();
  return log_base_ + log_.size() - 1;
}

void HubControl::add_sent(std::uint64_t id, std::int64_t n) {
  std::lock_guard lock(mu_);
  if (id >= log_base_ && id - log_base_ < log_.size()) {
    log_[id - log_base_].bytes_sent += static_cast<std::uint64_t>(n);  // wraps back for n < 0
  }
}

json HubControl::log() {
  std::lock_guard lock(mu_);
  json out = json::array();
  for (const LogEntry& e : log_) {
    out.push_back({{"method", e.method},
                   {"path", e.path},
                   {"query", e.query},
                   {"range", e.range},
                   {"authorization_present", e.authorization_present},
                   {"bytes_sent", e.bytes_sent},
                   {"status", e.status}});
  }
  return out;
}

void HubControl::clear_log() {
  std::lock_guard lock(mu_);
  log_base_ += log_.size();
  log_.clear();
  request_counts_.clear();
}

bool HubControl::wait(const std::string& event, const std::string& path, std::int64_t count,
                      std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  bool ok = cv_.wait_for(lock, timeout, [&] {
    if (stopping_) {
      return true;
    }
    if (event == "stalled") {
      return path == "*" ? !stalled_.empty() : stalled_.count(path) > 0;
    }
    if (path == "*") {
      return static_cast<std::int64_t>(log_.size()) >= count;
    }
    auto it = request_counts_.find(path);
    return it != request_counts_.end() && it->second >= count;
  });
  return ok && !stopping_;
}

void HubControl::stop() {
  std::lock_guard lock(mu_);
  stopping_ = true;
  cv_.notify_all();
}

}  // namespace fake::hub
