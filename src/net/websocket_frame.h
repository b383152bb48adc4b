// The WebSocket wire format (RFC 6455 §5): frames read from a client and
// written to it, and the messages that fragmented frames make up. Pure
// functions and small state machines over bytes, with no I/O, so the fuzz
// target (tests/fuzz/fuzz_websocket_frames.cpp) and the unit tests reach
// every rule:
// - a client's frames must be masked (§5.1), carry no RSV bit (no extension
//   is ever negotiated, §5.2), use a defined opcode (§5.2), encode their
//   length in the fewest bytes with the 64-bit form's top bit clear (§5.2);
// - control frames carry at most 125 bytes and are never fragmented
//   (§5.5); they may arrive between the fragments of a message (§5.4);
// - a message's fragments are a text or binary frame then continuations
//   (§5.4), reassembled within a size limit (1009 past it), and a text
//   message must be UTF-8 (§8.1, 1007), checked as each fragment arrives;
// - a close frame's body is empty or a status code that may be sent (§7.4)
//   and a UTF-8 reason.
// A frame that breaks a rule is answered with the close code the RFC names
// (1002 protocol error, 1007 invalid data, 1009 too big) and the connection
// is failed (§7.1.7).
//
// Internal to src/net. Thread-safety: value types; a MessageAssembler is
// used by one thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lemon::net::ws {

enum class Opcode : std::uint8_t {
  kContinuation = 0x0,
  kText = 0x1,
  kBinary = 0x2,
  kClose = 0x8,
  kPing = 0x9,
  kPong = 0xA,
};

inline bool is_control(Opcode op) {
  return (static_cast<std::uint8_t>(op) & 0x8) != 0;
}

// Control frames carry at most this many payload bytes (§5.5).
inline constexpr std::size_t kMaxControlPayload = 125;

struct Frame {
  Opcode opcode = Opcode::kText;
  bool fin = true;
  std::string payload;  // unmasked
};

// Why a connection is failed: the close code to send and a short reason.
struct FrameError {
  std::uint16_t code = 1002;
  std::string reason;
};

enum class ParseStep {
  kFrame,     // `frame` is filled and `consumed` bytes were used
  kNeedMore,  // nothing complete yet; nothing consumed
  kError,     // the bytes break a rule: fail the connection with `error`
};

// Parses the first frame of `in` (bytes a client sent). A frame whose
// header announces more than `max_payload` bytes is refused (1009) as soon
// as its header is complete, before its payload arrives.
ParseStep parse_client_frame(std::string_view in, std::size_t max_payload, Frame& frame,
                             std::size_t& consumed, FrameError& error);

// A frame as the server writes it: unmasked, FIN as given.
std::string encode_frame(Opcode opcode, std::string_view payload, bool fin = true);
// A frame as a client writes it, masked with `mask` (tests, the fuzz target).
std::string encode_masked_frame(Opcode opcode, std::string_view payload,
                                const std::array<std::uint8_t, 4>& mask, bool fin = true);
// A close frame's payload: the code, then `reason` cut to what fits in a
// control frame (123 bytes, at a UTF-8 character boundary).
std::string close_payload(std::uint16_t code, std::string_view reason);

// The status codes an endpoint may send in a close frame (§7.4.1, §7.4.2 and
// IANA's 1012-1014): 1000-1003, 1007-1014 and 3000-4999.
bool sendable_close_code(std::uint16_t code);

// A received close frame's body: its code (1005, "no status", when the body
// is empty) and reason, or the error to fail the connection with.
struct CloseBody {
  std::uint16_t code = 1005;
  std::string reason;
};
bool parse_close_payload(std::string_view payload, CloseBody& body, FrameError& error);

// Whether `text` is UTF-8 so far: every complete character valid and, when
// `complete` is false, a trailing partial character that could still become
// one. Returns the length of the prefix that ends on a character boundary,
// or nullopt when the text can no longer be UTF-8.
std::optional<std::size_t> utf8_prefix(std::string_view text, bool complete);

// Reassembles the data frames of one connection into messages (§5.4) and
// passes control frames through.
class MessageAssembler {
 public:
  explicit MessageAssembler(std::size_t max_message) : max_message_(max_message) {}

  enum class Kind {
    kNone,     // a fragment was taken; the message is not complete yet
    kMessage,  // `message` and `opcode` (kText or kBinary) are complete
    kControl,  // a control frame: `opcode` and `message` (its payload)
    kError,    // fail the connection with `error`
  };
  struct Outcome {
    Kind kind = Kind::kNone;
    Opcode opcode = Opcode::kText;
    std::string message;
    FrameError error;
  };
  Outcome add(Frame frame);

  // Raises or lowers the limit for messages begun from now on.
  void set_max_message(std::size_t max_message) { max_message_ = max_message; }
  std::size_t max_message() const { return max_message_; }
  // Bytes of an unfinished message held now.
  std::size_t held() const { return partial_.size(); }

 private:
  std::size_t max_message_;
  bool in_message_ = false;
  Opcode opcode_ = Opcode::kText;
  std::string partial_;
  std::size_t checked_ = 0;  // partial_'s prefix known to be whole UTF-8 characters
};

}  // namespace lemon::net::ws
