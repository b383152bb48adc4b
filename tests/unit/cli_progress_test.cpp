// The CLI's pure parts: SSE event splitting at any chunk boundary, byte and
// duration formatting, and the progress board on a terminal (redrawn bars)
// and on a pipe (a few plain lines per file).
#include <gtest/gtest.h>

#include <sstream>

#include "lemon/cli/progress_board.h"
#include "lemon/cli/sse_events.h"

namespace lemon::cli {
namespace {

using namespace std::chrono_literals;

std::vector<SseEvent> split_every(const std::string& stream, std::size_t step) {
  SseEvents parser;
  std::vector<SseEvent> events;
  for (std::size_t i = 0; i < stream.size(); i += step) {
    parser.feed(std::string_view(stream).substr(i, step),
                [&](const SseEvent& e) { events.push_back(e); });
  }
  return events;
}

TEST(CliSse, SameEventsWhateverTheChunking) {
  const std::string stream =
      ": keepalive\n\nevent: progress\r\ndata: {\"a\":1}\r\n\r\ndata: x\ndata: y\n\n"
      "event: complete\ndata: {}\n\n";
  for (std::size_t step : {1u, 2u, 7u, 1000u}) {
    auto events = split_every(stream, step);
    ASSERT_EQ(events.size(), 3u) << "step " << step;
    EXPECT_EQ(events[0].event, "progress");
    EXPECT_EQ(events[0].data, "{\"a\":1}");
    EXPECT_EQ(events[1].event, "");
    EXPECT_EQ(events[1].data, "x\ny");
    EXPECT_EQ(events[2].event, "complete");
  }
}

TEST(CliSse, AnUnfinishedEventIsNotDelivered) {
  EXPECT_TRUE(split_every("event: progress\ndata: {}\n", 3).empty());
}

TEST(CliFormat, BytesAndDurations) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(300ull << 20), "300.0 MiB");
  EXPECT_EQ(format_bytes(3ull << 30), "3.00 GiB");
  EXPECT_EQ(format_duration(7), "0:07");
  EXPECT_EQ(format_duration(754), "12:34");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(-1), "--:--");
}

TEST(CliFormat, BarShowsPercentBytesRateAndTimeLeft) {
  FileProgress f{"m.gguf", 1, 2, 50ull << 20, 100ull << 20, 10.0 * (1 << 20), false};
  EXPECT_EQ(render_bar(f, 10),
            "[1/2] m.gguf  [#####-----]  50%  50.0 MiB/100.0 MiB  10.0 MiB/s  0:05");
  f.finished = true;
  f.done = f.total;
  EXPECT_EQ(render_bar(f, 10), "[1/2] m.gguf  [##########] 100%  100.0 MiB/100.0 MiB  done");
}

nlohmann::json progress(const std::string& file, int index, std::uint64_t done,
                        std::uint64_t total) {
  return {{"file", file},
          {"file_index", index},
          {"total_files", 2},
          {"bytes_downloaded", done},
          {"bytes_total", total}};
}

TEST(CliProgressBoard, PipeGetsAFewPlainLinesPerFile) {
  std::ostringstream out;
  ProgressBoard board(out, /*terminal=*/false);
  auto t = ProgressBoard::Clock::time_point{};
  for (int i = 0; i <= 100; ++i) {
    board.on_progress(progress("a.gguf", 1, i * 1000ull, 100000), t + i * 100ms);
  }
  board.on_progress(progress("b.gguf", 2, 0, 10), t + 20s);
  board.on_complete();
  std::string text = out.str();
  EXPECT_EQ(text.find("\x1b["), std::string::npos) << "no escapes on a pipe";
  auto lines = std::count(text.begin(), text.end(), '\n');
  EXPECT_EQ(lines, 7) << text;  // a: 0/25/50/75 % and done; b: start and done
  EXPECT_NE(text.find("[1/2] a.gguf"), std::string::npos);
  EXPECT_NE(text.find("done"), std::string::npos);
  EXPECT_NE(text.find("[2/2] b.gguf"), std::string::npos);
  ASSERT_EQ(board.files().size(), 2u);
  EXPECT_GT(board.files()[0].rate, 0);
}

TEST(CliProgressBoard, TerminalRedrawsEveryBarInPlace) {
  std::ostringstream out;
  ProgressBoard board(out, /*terminal=*/true);
  auto t = ProgressBoard::Clock::time_point{};
  board.on_progress(progress("a.gguf", 1, 10, 100), t);
  board.on_progress(progress("a.gguf", 1, 50, 100), t + 1s);
  board.on_progress(progress("b.gguf", 2, 5, 10), t + 2s);
  board.on_complete();
  std::string text = out.str();
  EXPECT_NE(text.find("\x1b[1F"), std::string::npos) << "moves up over the one bar";
  EXPECT_NE(text.find("\x1b[2F"), std::string::npos) << "moves up over both bars";
  EXPECT_NE(text.find("\x1b[2K"), std::string::npos) << "clears each line";
  EXPECT_TRUE(board.files()[0].finished);
  EXPECT_TRUE(board.files()[1].finished);
}

}  // namespace
}  // namespace lemon::cli
