#include "lemon/telemetry/log_ring.h"

#include <chrono>
#include <ctime>
#include <mutex>

#include <spdlog/sinks/base_sink.h>

#include "lemon/core/clock.h"
#include "lemon/core/enum_names.h"

namespace lemon::telemetry {
namespace {

constexpr auto kLevelTexts =
    std::to_array<EnumName<spdlog::level::level_enum>>({{spdlog::level::trace, "trace"},
                                                        {spdlog::level::debug, "debug"},
                                                        {spdlog::level::info, "info"},
                                                        {spdlog::level::warn, "warning"},
                                                        {spdlog::level::err, "error"},
                                                        {spdlog::level::critical, "critical"}});

std::string level_text(spdlog::level::level_enum level) {
  return name_of(kLevelTexts, level, "info");
}

class RingSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit RingSink(LogRing& ring) : ring_(ring) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (msg.logger_name == "output") {
      return;  // a backend's output line: the output tap adds it, tagged
    }
    LogLine line;
    line.time_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count();
    line.level = level_text(msg.level);
    line.source.assign(msg.logger_name.data(), msg.logger_name.size());
    line.text.assign(msg.payload.data(), msg.payload.size());
    ring_.add(std::move(line));
  }
  void flush_() override {}

 private:
  LogRing& ring_;
};

}  // namespace

std::string LogLine::formatted() const {
  std::time_t secs = static_cast<std::time_t>(time_ms / 1000);
  std::tm tm{};
  ::localtime_r(&secs, &tm);
  char stamp[32];
  std::size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
  std::string out(stamp, n);
  char millis[8];
  std::snprintf(millis, sizeof millis, ".%03d", static_cast<int>(time_ms % 1000));
  out += millis;
  std::string upper = level == "warning" ? "WARN" : level;
  for (char& c : upper) {
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  upper.resize(std::max<std::size_t>(upper.size(), 5), ' ');
  out += ' ';
  out += upper;
  out += " [";
  out += model.empty() ? source : source + " " + model;
  out += "] ";
  out += text;
  return out;
}

nlohmann::json LogLine::to_json(std::uint64_t seq) const {
  return {{"seq", seq},     {"time", static_cast<double>(time_ms) / 1000.0},
          {"level", level}, {"source", source},
          {"model", model}, {"text", text}};
}

void LogRing::add_output(std::string_view model, std::string_view text) {
  LogLine line;
  line.time_ms = unix_ms_now();
  line.level = "output";
  line.source = "backend";
  line.model = std::string(model);
  line.text = std::string(text);
  stream_.publish(std::move(line));
}

spdlog::sink_ptr LogRing::make_sink(LogRing& ring) {
  return std::make_shared<RingSink>(ring);
}

}  // namespace lemon::telemetry
