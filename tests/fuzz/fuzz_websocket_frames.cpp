// Fuzz target: the WebSocket codec (src/net/websocket_frame.h). The input,
// as bytes a client sent after its handshake, is parsed into frames and
// messages twice, once whole and once cut at offsets taken from its first
// bytes (as the socket's reads would cut it); both runs must agree on every
// message, control frame and the error that ends them. Every frame obeys
// the rules it was parsed under (a payload within the limit, control frames
// of at most 125 bytes and final), every text message is UTF-8, every close
// body parses to a sendable code or fails, and what the server would write
// back (a re-encoded frame, a close payload) parses again to the same.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "websocket_frame.h"

using namespace lemon::net::ws;

namespace {

constexpr std::size_t kMaxMessage = 1 << 12;

struct Event {
  MessageAssembler::Kind kind;
  Opcode opcode;
  std::string message;
  std::uint16_t error = 0;
  bool operator==(const Event&) const = default;
};

void check_frame(const Frame& f) {
  if (f.payload.size() > kMaxMessage) {
    std::abort();
  }
  if (is_control(f.opcode) && (f.payload.size() > kMaxControlPayload || !f.fin)) {
    std::abort();
  }
  // What a client could send again: masked, it parses to the same frame.
  const std::string again =
      encode_masked_frame(f.opcode, f.payload, {0xA5, 0x5A, 0x01, 0xFE}, f.fin);
  Frame g;
  std::size_t used = 0;
  FrameError error;
  if (parse_client_frame(again, kMaxMessage, g, used, error) != ParseStep::kFrame ||
      used != again.size() || g.payload != f.payload || g.opcode != f.opcode || g.fin != f.fin) {
    std::abort();
  }
}

void check_event(const Event& e) {
  if (e.kind == MessageAssembler::Kind::kMessage && e.opcode == Opcode::kText &&
      utf8_prefix(e.message, true) != e.message.size()) {
    std::abort();  // a text message handed out must be UTF-8
  }
  if (e.kind == MessageAssembler::Kind::kControl && e.opcode == Opcode::kClose) {
    CloseBody body;
    FrameError error;
    if (parse_close_payload(e.message, body, error)) {
      if (body.code != 1005 && !sendable_close_code(body.code)) {
        std::abort();
      }
      // Our answer echoes it: a control frame's worth, still parseable.
      const std::string echo = close_payload(body.code == 1005 ? 1000 : body.code, body.reason);
      CloseBody back;
      if (echo.size() > kMaxControlPayload || !parse_close_payload(echo, back, error)) {
        std::abort();
      }
    } else if (error.code != 1002 && error.code != 1007) {
      std::abort();
    }
  }
}

std::vector<Event> run(std::string_view in, const std::vector<std::size_t>& cuts) {
  std::vector<Event> events;
  MessageAssembler assembler(kMaxMessage);
  std::string buffer;
  std::size_t from = 0;
  std::vector<std::size_t> ends = cuts;
  ends.push_back(in.size());
  for (std::size_t end : ends) {
    if (end < from || end > in.size()) {
      continue;
    }
    buffer.append(in.substr(from, end - from));
    from = end;
    for (;;) {
      Frame frame;
      std::size_t used = 0;
      FrameError error;
      const ParseStep step = parse_client_frame(buffer, kMaxMessage, frame, used, error);
      if (step == ParseStep::kNeedMore) {
        if (used != 0) {
          std::abort();
        }
        break;
      }
      if (step == ParseStep::kError) {
        if (error.code != 1002 && error.code != 1009) {
          std::abort();
        }
        events.push_back({MessageAssembler::Kind::kError, Opcode::kText, {}, error.code});
        return events;
      }
      if (used == 0 || used > buffer.size()) {
        std::abort();
      }
      buffer.erase(0, used);
      check_frame(frame);
      auto out = assembler.add(std::move(frame));
      if (out.kind == MessageAssembler::Kind::kNone) {
        continue;
      }
      Event e{out.kind, out.opcode, out.message,
              out.kind == MessageAssembler::Kind::kError ? out.error.code : std::uint16_t{0}};
      if (e.kind == MessageAssembler::Kind::kError && e.error != 1002 && e.error != 1007 &&
          e.error != 1009) {
        std::abort();
      }
      check_event(e);
      events.push_back(std::move(e));
      if (out.kind == MessageAssembler::Kind::kError) {
        return events;
      }
      if (assembler.held() > kMaxMessage) {
        std::abort();
      }
    }
  }
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::size_t> cuts;
  for (std::size_t i = 0; i < 4 && i < size; ++i) {
    cuts.push_back((cuts.empty() ? 0 : cuts.back()) + data[i] % 32);
  }
  if (run(in, {}) != run(in, cuts)) {
    std::abort();
  }
  return 0;
}
