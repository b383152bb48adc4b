// Fuzz target: the incremental chunked decoder. The input is fed twice, once
// whole and once cut at offsets taken from its first bytes; both runs must
// agree on the outcome, the decoded bytes and the bytes left after the
// message (a state-machine bug shows as a difference), and never hand out
// more than max_body bytes.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "chunked_decoder.h"

using lemon::net::wire::ChunkedDecoder;

namespace {

constexpr std::uint64_t kMaxBody = 1 << 16;

struct Run {
  ChunkedDecoder::Step last = ChunkedDecoder::Step::kNeedMore;
  std::string body;
  std::string rest;  // bytes after the message (kDone only)
};

Run decode(std::string_view in, const std::vector<std::size_t>& cuts) {
  ChunkedDecoder d(kMaxBody);
  Run run;
  std::size_t from = 0;
  std::vector<std::size_t> ends = cuts;
  ends.push_back(in.size());
  for (std::size_t end : ends) {
    if (end < from || end > in.size()) {
      continue;
    }
    std::string_view piece_in = in.substr(from, end - from);
    from = end;
    for (;;) {
      std::string_view piece;
      run.last = d.next(piece_in, piece);
      if (run.last == ChunkedDecoder::Step::kData) {
        if (piece.empty()) {
          std::abort();  // kData promises a non-empty piece
        }
        run.body.append(piece);
        continue;
      }
      if (run.last == ChunkedDecoder::Step::kDone) {
        run.rest = std::string(piece_in) + std::string(in.substr(from));
        return run;
      }
      if (run.last != ChunkedDecoder::Step::kNeedMore) {
        return run;  // kError or kTooLarge
      }
      break;
    }
  }
  // body_bytes() counts the sizes announced so far; no more than that, and
  // never more than max_body, is handed out.
  if (run.body.size() > d.body_bytes() || d.body_bytes() > kMaxBody) {
    std::abort();
  }
  return run;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) {
    return 0;
  }
  // The first two bytes choose the cuts; the rest is the message.
  const std::size_t step = 1 + data[0] % 16;
  const std::size_t offset = data[1] % 8;
  std::string_view in(reinterpret_cast<const char*>(data) + 2, size - 2);
  std::vector<std::size_t> cuts;
  for (std::size_t at = offset; at < in.size(); at += step) {
    cuts.push_back(at);
  }
  Run whole = decode(in, {});
  Run split = decode(in, cuts);
  if (whole.last != split.last || whole.body != split.body || whole.rest != split.rest) {
    std::abort();
  }
  return 0;
}
