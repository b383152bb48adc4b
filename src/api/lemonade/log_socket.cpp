#include "lemon/api/lemonade/log_socket.h"

#include <chrono>
#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include "lemon/net/websocket.h"

namespace lemon::api {
namespace {

using Follower = telemetry::LogRing::Stream::Follower;
using Item = telemetry::LogRing::Stream::Item;

std::string lemonade_timestamp(std::int64_t time_ms) {
  const auto secs = static_cast<std::time_t>(time_ms / 1000);
  std::tm tm{};
  ::localtime_r(&secs, &tm);
  char stamp[40];
  std::size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
  n += static_cast<std::size_t>(
      std::snprintf(stamp + n, sizeof stamp - n, ".%03d", static_cast<int>(time_ms % 1000)));
  return std::string(stamp, n);
}

const char* lemonade_severity(const std::string& level) {
  if (level == "trace") {
    return "Trace";
  }
  if (level == "debug") {
    return "Debug";
  }
  if (level == "warning") {
    return "Warn";
  }
  if (level == "error") {
    return "Error";
  }
  if (level == "critical") {
    return "Fatal";
  }
  return "Info";  // info, and a backend's own output
}

// One subscriber: the ring's follower for it, woken through its socket.
class LogSession final : public http::JsonSocketHandler {
 public:
  explicit LogSession(telemetry::LogRing& ring) : ring_(ring) {}

  void on_open(const std::shared_ptr<http::JsonSocket>& socket) override { socket_ = socket; }

  void on_message(const std::string& type, const nlohmann::json& message) override {
    if (type != "logs.subscribe") {
      socket_->send_error("Expected logs.subscribe message");
      return;
    }
    std::optional<std::uint64_t> after;
    if (auto it = message.find("after_seq"); it != message.end() && !it->is_null()) {
      if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<long long>() >= 0)) {
        socket_->send_error("'after_seq' must be a log sequence number (0 or more) or null");
        return;
      }
      after = it->get<std::uint64_t>();
    }
    bool router_format = false;
    if (auto it = message.find("format"); it != message.end() && !it->is_null()) {
      if (!it->is_string() || (*it != "lemonade" && *it != "router")) {
        socket_->send_error("'format' must be \"lemonade\" or \"router\"");
        return;
      }
      router_format = *it == "router";
    }
    stop_following();
    router_format_ = router_format;
    follower_ = ring_.follow(after, kSnapshotEntries);
    std::vector<Item> items = follower_->next(std::chrono::milliseconds(0));
    nlohmann::json entries = nlohmann::json::array();
    const std::size_t first = items.size() > kSnapshotEntries ? items.size() - kSnapshotEntries : 0;
    for (std::size_t i = first; i < items.size(); ++i) {
      entries.push_back(entry(items[i]));
    }
    if (!socket_->send({{"type", "logs.snapshot"}, {"entries", std::move(entries)}})) {
      too_slow();
      return;
    }
    // From here on each line wakes the socket's thread, which sends it.
    std::weak_ptr<http::JsonSocket> weak = socket_;
    follower_->set_notify([weak] {
      if (auto socket = weak.lock()) {
        socket->wake();
      }
    });
    on_wake();  // what came between the snapshot and the notify
  }

  void on_wake() override {
    if (!follower_) {
      return;
    }
    for (const Item& item : follower_->next(std::chrono::milliseconds(0))) {
      if (!socket_->send({{"type", "logs.entry"}, {"entry", entry(item)}})) {
        too_slow();
        return;
      }
    }
    if (follower_->dropped()) {
      too_slow();
    } else if (follower_->closed()) {
      stop_following();  // the server stops: the socket is being closed too
    }
  }

  void on_closed() override { stop_following(); }

 private:
  nlohmann::json entry(const Item& item) const {
    return router_format_ ? item.value->to_json(item.id) : lemonade_log_entry(item.id, *item.value);
  }

  void too_slow() {
    stop_following();
    socket_->abandon(net::close_code::kPolicyViolation, "the client reads the log too slowly");
  }

  void stop_following() {
    if (follower_) {
      follower_->set_notify(nullptr);
      follower_->close();
      follower_.reset();
    }
  }

  telemetry::LogRing& ring_;
  std::shared_ptr<http::JsonSocket> socket_;
  std::shared_ptr<Follower> follower_;
  bool router_format_ = false;
};

}  // namespace

nlohmann::json lemonade_log_entry(std::uint64_t seq, const telemetry::LogLine& line) {
  const std::string timestamp = lemonade_timestamp(line.time_ms);
  const char* severity = lemonade_severity(line.level);
  const std::string& tag = line.model.empty() ? line.source : line.model;
  std::string text = line.text;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
    text.pop_back();
  }
  std::string whole = timestamp + " [" + severity + "] (" + tag + ") " + text;
  return {{"seq", seq},
          {"timestamp", timestamp},
          {"severity", severity},
          {"tag", tag},
          {"line", std::move(whole)}};
}

http::SocketRoute log_socket_route(telemetry::LogRing& ring) {
  http::SocketRoute route;
  route.scope = http::Scope::kRead;
  route.max_message_bytes = 16u << 10;
  route.open = [&ring](const net::Request&, const http::SocketCaller&) {
    return Result<std::shared_ptr<http::JsonSocketHandler>>(
        std::shared_ptr<http::JsonSocketHandler>(std::make_shared<LogSession>(ring)));
  };
  return route;
}

}  // namespace lemon::api
