#include "hub_answers.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

namespace fake::hub {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kChunk = std::size_t{256} * 1024;  // bytes per write of a file body

struct ByteRange {
  std::uint64_t first = 0;
  std::uint64_t last = 0;  // inclusive
};
enum class RangeKind { kNone, kRange, kUnsatisfiable };

// "bytes=N-", "bytes=N-M" and "bytes=-N" (the last N bytes). Several ranges
// are not supported (416); a header that is not a byte range is ignored.
RangeKind parse_range(const std::string& header, std::uint64_t size, ByteRange& out) {
  if (!header.starts_with("bytes=")) {
    return RangeKind::kNone;
  }
  std::string_view spec = std::string_view(header).substr(6);
  while (!spec.empty() && spec.front() == ' ') {
    spec.remove_prefix(1);
  }
  if (spec.find(',') != std::string_view::npos) {
    return RangeKind::kUnsatisfiable;
  }
  std::size_t dash = spec.find('-');
  if (dash == std::string_view::npos) {
    return RangeKind::kNone;
  }
  std::string_view a = spec.substr(0, dash);
  std::string_view b = spec.substr(dash + 1);
  std::uint64_t x = 0;
  std::uint64_t y = 0;
  if (a.empty()) {
    if (!parse_u64(b, y)) {
      return RangeKind::kNone;
    }
    if (y == 0 || size == 0) {
      return RangeKind::kUnsatisfiable;
    }
    out = {size - std::min(y, size), size - 1};
    return RangeKind::kRange;
  }
  if (!parse_u64(a, x) || (!b.empty() && !parse_u64(b, y))) {
    return RangeKind::kNone;
  }
  if (x >= size || (!b.empty() && y < x)) {
    return RangeKind::kUnsatisfiable;
  }
  out = {x, b.empty() ? size - 1 : std::min(y, size - 1)};
  return RangeKind::kRange;
}

// One file body being sent, under the knobs of its rule.
class Transfer {
 public:
  Transfer(HubControl& control, int fd, Rule rule, std::uint64_t generation, std::uint64_t first,
           std::uint64_t length, std::uint64_t log_id, std::string key)
      : control_(control),
        fd_(fd),
        rule_(std::move(rule)),
        generation_(generation),
        first_(first),
        length_(length),
        log_id_(log_id),
        key_(std::move(key)),
        throttle_start_(Clock::now()) {}
  ~Transfer() { ::close(fd_); }
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  // httplib's content provider: `sent` body bytes are out; false drops the connection.
  bool provide(std::uint64_t sent, httplib::DataSink& sink) {
    if (sent >= length_) {
      return true;
    }
    std::uint64_t limit = length_;
    if (rule_.drop_after) {
      if (sent >= *rule_.drop_after) {
        return false;
      }
      limit = std::min(limit, *rule_.drop_after);
    }
    if (rule_.stall_after && !stalled_) {
      if (sent >= *rule_.stall_after) {
        stalled_ = true;
        if (!control_.stall(key_, generation_, [&sink] { return sink.is_writable(); })) {
          return false;
        }
        throttle_start_ = Clock::now();  // the throttle restarts after the stall
        throttle_base_ = sent;
      } else {
        limit = std::min(limit, *rule_.stall_after);
      }
    }
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(limit - sent, kChunk));
    if (rule_.bytes_per_sec > 0) {
      want = std::min<std::size_t>(
          want, static_cast<std::size_t>(std::max<std::uint64_t>(1, rule_.bytes_per_sec / 20)));
      std::this_thread::sleep_until(
          throttle_start_ +
          std::chrono::microseconds((sent - throttle_base_) * 1000000 / rule_.bytes_per_sec));
    }
    buf_.resize(want);
    ssize_t n = ::pread(fd_, buf_.data(), want, static_cast<off_t>(first_ + sent));
    if (n <= 0) {
      return false;  // the file shrank under us
    }
    const std::uint64_t got = static_cast<std::uint64_t>(n);
    if (rule_.corrupt) {
      const std::uint64_t at = length_ / 2;  // the middle of this body
      if (at >= sent && at < sent + got) {
        buf_[at - sent] = static_cast<char>(~buf_[at - sent]);
      }
    }
    // Counted first, so the log has them by the time the client has them.
    control_.add_sent(log_id_, static_cast<std::int64_t>(got));
    if (!sink.write(buf_.data(), static_cast<std::size_t>(got))) {
      control_.add_sent(log_id_, -static_cast<std::int64_t>(got));
      return false;
    }
    return true;
  }

 private:
  HubControl& control_;
  const int fd_;
  const Rule rule_;
  const std::uint64_t generation_;
  const std::uint64_t first_;
  const std::uint64_t length_;
  const std::uint64_t log_id_;
  const std::string key_;
  Clock::time_point throttle_start_;  // the throttle counts from here ...
  std::uint64_t throttle_base_ = 0;   // ... and from this many bytes sent
  bool stalled_ = false;
  std::vector<char> buf_;
};

}  // namespace

void reply_json(httplib::Response& res, int status, const json& j) {
  res.status = status;
  res.set_content(j.dump(), "application/json");
}

void not_found(httplib::Response& res, const char* code, const std::string& message) {
  reply_json(res, 404, {{"error", message}});
  res.set_header("X-Error-Code", code);
}

void deny(httplib::Response& res, int status, const std::string& repo) {
  reply_json(res, status,
             {{"error", "Access to model " + repo +
                            " is restricted. You must have access to it and be "
                            "authenticated to access it. Please log in."}});
  res.set_header("X-Error-Code", "GatedRepo");
}

bool parse_u64(std::string_view s, std::uint64_t& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

void serve_bytes(HubControl& control, const httplib::Request& req, httplib::Response& res,
                 const std::string& key, const FileInfo& f, const std::string& etag) {
  auto [rule, generation] = control.take_file_rule(key, req.method == "HEAD");
  if (rule && rule->status != 0) {
    control.log_request(req, rule->status, key);
    reply_json(res, rule->status, {{"error", "fake-hub: status knob for " + key}});
    return;
  }
  res.set_header("Accept-Ranges", "bytes");
  res.set_header("ETag", "\"" + etag + "\"");
  ByteRange range{0, f.size == 0 ? 0 : f.size - 1};
  int status = 200;
  switch (parse_range(req.get_header_value("Range"), f.size, range)) {
    case RangeKind::kUnsatisfiable:
      control.log_request(req, 416, key);
      res.status = 416;
      res.set_header("Content-Range", "bytes */" + std::to_string(f.size));
      return;
    case RangeKind::kRange:
      status = 206;
      res.set_header("Content-Range", "bytes " + std::to_string(range.first) + "-" +
                                          std::to_string(range.last) + "/" +
                                          std::to_string(f.size));
      break;
    case RangeKind::kNone:
      break;
  }
  const std::uint64_t length = f.size == 0 ? 0 : range.last - range.first + 1;
  int fd = length == 0 ? -1 : ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (length != 0 && fd < 0) {
    control.log_request(req, 500, key);
    reply_json(res, 500, {{"error", "fake-hub: cannot open " + key}});
    return;
  }
  const std::uint64_t id = control.log_request(req, status, key);
  res.status = status;
  if (length == 0) {
    res.set_content(std::string(), "application/octet-stream");
    return;
  }
  auto transfer = std::make_shared<Transfer>(control, fd, rule.value_or(Rule{}), generation,
                                             range.first, length, id, key);
  res.set_content_provider(static_cast<std::size_t>(length), "application/octet-stream",
                           [transfer](std::size_t offset, std::size_t, httplib::DataSink& sink) {
                             return transfer->provide(offset, sink);
                           });
}

}  // namespace fake::hub
