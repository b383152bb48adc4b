// ProgressBoard: the live view of a /pull or /install stream. One bar per
// file with bytes, percent, rate and time left. On a terminal the bars are
// redrawn in place (ANSI cursor moves); otherwise it writes plain lines: one
// when a file starts, one per 25 % and one when it ends, so logs stay short.
//
// The server's progress events carry the current file's counts; the board
// measures rate itself over the time it is given, so tests drive the clock.
//
// Thread-safety: one board per stream, used by one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lemon::cli {

// "512 B", "1.5 KiB", "12.3 MiB", "1.02 GiB".
std::string format_bytes(std::uint64_t bytes);
// "0:07", "12:34", "1:02:03"; "--:--" when unknown (negative).
std::string format_duration(double seconds);

struct FileProgress {
  std::string file;
  int index = 0;  // 1-based
  int total_files = 0;
  std::uint64_t done = 0;
  std::uint64_t total = 0;
  double rate = 0;  // bytes per second, smoothed
  bool finished = false;
};

// One bar line, `width` columns for the bar itself:
// "[1/2] model.gguf  [#######-------]  42%  12.0 MiB/28.6 MiB  3.1 MiB/s  0:05"
std::string render_bar(const FileProgress& f, int width);

class ProgressBoard {
 public:
  using Clock = std::chrono::steady_clock;
  ProgressBoard(std::ostream& out, bool terminal) : out_(out), terminal_(terminal) {}

  // A `progress` event's data.
  void on_progress(const nlohmann::json& event, Clock::time_point now);
  // The stream's `complete` event: every file is done.
  void on_complete();
  // Ends the bars' lines (before an error message is printed).
  void close();

  const std::vector<FileProgress>& files() const { return files_; }

 private:
  void redraw();
  void plain(const FileProgress& f, int quarter);

  std::ostream& out_;
  bool terminal_;
  std::vector<FileProgress> files_;
  std::vector<int> quarters_printed_;
  int lines_drawn_ = 0;
  Clock::time_point last_time_{};
  std::uint64_t last_done_ = 0;
  bool closed_ = false;
};

}  // namespace lemon::cli
