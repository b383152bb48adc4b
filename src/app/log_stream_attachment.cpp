#include "lemon/app/log_stream_attachment.h"

#include <string_view>

#include "lemon/core/log.h"

namespace lemon {

LogStreamAttachment::LogStreamAttachment(telemetry::LogRing& ring)
    : sink_(telemetry::LogRing::make_sink(ring)) {
  add_log_sink(sink_);
  set_output_tap(
      [&ring](std::string_view model, std::string_view line) { ring.add_output(model, line); });
}

LogStreamAttachment::~LogStreamAttachment() {
  set_output_tap({});
  remove_log_sink(sink_);
}

}  // namespace lemon
