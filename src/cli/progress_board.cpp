#include "lemon/cli/progress_board.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace lemon::cli {
namespace {

std::string printf_string(const char* format, double value, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value, unit);
  return buf;
}

}  // namespace

std::string format_bytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) {
    return std::to_string(bytes) + " B";
  }
  double v = static_cast<double>(bytes) / 1024.0;
  std::size_t unit = 0;
  while (v >= 1024.0 && unit + 1 < std::size(kUnits)) {
    v /= 1024.0;
    ++unit;
  }
  return printf_string(v < 10.0 ? "%.2f %s" : "%.1f %s", v, kUnits[unit]);
}

std::string format_duration(double seconds) {
  if (seconds < 0 || !std::isfinite(seconds)) {
    return "--:--";
  }
  auto s = static_cast<long long>(std::llround(seconds));
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  }
  return buf;
}

std::string render_bar(const FileProgress& f, int width) {
  double fraction = f.total > 0
                        ? std::min(1.0, static_cast<double>(f.done) / static_cast<double>(f.total))
                        : (f.finished ? 1.0 : 0.0);
  auto filled = static_cast<int>(std::floor(fraction * width));
  std::string line = "[" + std::to_string(f.index) + "/" + std::to_string(f.total_files) + "] " +
                     f.file + "  [" + std::string(static_cast<std::size_t>(filled), '#') +
                     std::string(static_cast<std::size_t>(width - filled), '-') + "] ";
  char pct[8];
  std::snprintf(pct, sizeof pct, "%3d%%", static_cast<int>(std::floor(fraction * 100.0)));
  line += pct;
  line += "  " + format_bytes(f.done) + "/" + (f.total > 0 ? format_bytes(f.total) : "?");
  if (f.finished) {
    line += "  done";
  } else {
    line += "  " + (f.rate > 0 ? format_bytes(static_cast<std::uint64_t>(f.rate)) + "/s" : "-/s");
    double left =
        f.rate > 0 && f.total >= f.done ? static_cast<double>(f.total - f.done) / f.rate : -1.0;
    line += "  " + format_duration(left);
  }
  return line;
}

void ProgressBoard::on_progress(const nlohmann::json& event, Clock::time_point now) {
  std::string file = event.value("file", "");
  if (file.empty()) {
    return;
  }
  int index = event.value("file_index", 0);
  if (files_.empty() || files_.back().file != file || files_.back().index != index) {
    if (!files_.empty()) {
      files_.back().finished = true;
      if (files_.back().total > 0) {
        files_.back().done = files_.back().total;
      }
      if (!terminal_) {
        plain(files_.back(), 4);
      }
    }
    FileProgress f;
    f.file = file;
    f.index = index;
    files_.push_back(f);
    quarters_printed_.push_back(-1);
    last_time_ = now;
    last_done_ = 0;
  }
  FileProgress& f = files_.back();
  f.total_files = event.value("total_files", 0);
  f.total = event.value("bytes_total", std::uint64_t{0});
  std::uint64_t done = event.value("bytes_downloaded", std::uint64_t{0});
  double dt = std::chrono::duration<double>(now - last_time_).count();
  if (dt >= 0.2 && done >= last_done_) {
    double instant = static_cast<double>(done - last_done_) / dt;
    f.rate = f.rate > 0 ? 0.7 * f.rate + 0.3 * instant : instant;
    last_time_ = now;
    last_done_ = done;
  } else if (done < last_done_) {
    last_done_ = done;  // a retry restarted the file
    last_time_ = now;
  }
  f.done = done;
  if (terminal_) {
    redraw();
  } else {
    int quarter = f.total > 0 ? static_cast<int>(4 * f.done / f.total) : 0;
    plain(f, std::min(quarter, 3));
  }
}

void ProgressBoard::on_complete() {
  if (!files_.empty() && !files_.back().finished) {
    files_.back().finished = true;
    if (files_.back().total > 0) {
      files_.back().done = files_.back().total;
    }
    if (terminal_) {
      redraw();
    } else {
      plain(files_.back(), 4);
    }
  }
  close();
}

void ProgressBoard::close() {
  if (terminal_ && lines_drawn_ > 0 && !closed_) {
    out_.flush();
  }
  closed_ = true;
}

void ProgressBoard::redraw() {
  // Move to the first bar, rewrite every bar, leave the cursor below them.
  if (lines_drawn_ > 0) {
    out_ << "\x1b[" << lines_drawn_ << "F";
  }
  for (const auto& f : files_) {
    out_ << "\x1b[2K" << render_bar(f, 24) << "\n";
  }
  lines_drawn_ = static_cast<int>(files_.size());
  out_.flush();
}

void ProgressBoard::plain(const FileProgress& f, int quarter) {
  auto slot = static_cast<std::size_t>(&f - files_.data());
  int& printed = quarters_printed_[slot];
  if (quarter <= printed) {
    return;
  }
  printed = quarter;
  out_ << render_bar(f, 24) << "\n";
  out_.flush();
}

}  // namespace lemon::cli
