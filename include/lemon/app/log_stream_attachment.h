// Sends the daemon's log lines and its backends' output to the telemetry
// log ring too (GET /logs/stream) for as long as it lives: attached on
// construction, detached on destruction, on every way out of main.
//
// Thread-safety: construct and destroy on the main thread; the ring
// outlives it.
#pragma once

#include <spdlog/common.h>

#include "lemon/telemetry/log_ring.h"

namespace lemon {

class LogStreamAttachment {
 public:
  explicit LogStreamAttachment(telemetry::LogRing& ring);
  ~LogStreamAttachment();
  LogStreamAttachment(const LogStreamAttachment&) = delete;
  LogStreamAttachment& operator=(const LogStreamAttachment&) = delete;

 private:
  spdlog::sink_ptr sink_;
};

}  // namespace lemon
