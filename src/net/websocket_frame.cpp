#include "websocket_frame.h"

#include <algorithm>

namespace lemon::net::ws {
namespace {

bool defined_opcode(std::uint8_t op) {
  return op <= 0x2 || (op >= 0x8 && op <= 0xA);
}

FrameError fail(std::uint16_t code, std::string reason) {
  return FrameError{code, std::move(reason)};
}

// The frame header a server writes before `length` payload bytes.
std::string frame_header(Opcode opcode, std::size_t length, bool fin, bool masked) {
  std::string out;
  out.reserve(14);
  out += static_cast<char>((fin ? 0x80 : 0x00) | static_cast<std::uint8_t>(opcode));
  const std::uint8_t mask_bit = masked ? 0x80 : 0x00;
  if (length <= 125) {
    out += static_cast<char>(mask_bit | length);
  } else if (length <= 0xFFFF) {
    out += static_cast<char>(mask_bit | 126);
    out += static_cast<char>((length >> 8) & 0xFF);
    out += static_cast<char>(length & 0xFF);
  } else {
    out += static_cast<char>(mask_bit | 127);
    for (int shift = 56; shift >= 0; shift -= 8) {
      out += static_cast<char>((static_cast<std::uint64_t>(length) >> shift) & 0xFF);
    }
  }
  return out;
}

}  // namespace

ParseStep parse_client_frame(std::string_view in, std::size_t max_payload, Frame& frame,
                             std::size_t& consumed, FrameError& error) {
  consumed = 0;
  if (in.size() < 2) {
    return ParseStep::kNeedMore;
  }
  const auto b0 = static_cast<std::uint8_t>(in[0]);
  const auto b1 = static_cast<std::uint8_t>(in[1]);
  const bool fin = (b0 & 0x80) != 0;
  const std::uint8_t opcode = b0 & 0x0F;
  if ((b0 & 0x70) != 0) {
    error = fail(1002, "reserved bits set without a negotiated extension");
    return ParseStep::kError;
  }
  if (!defined_opcode(opcode)) {
    error = fail(1002, "unknown opcode " + std::to_string(opcode));
    return ParseStep::kError;
  }
  const auto op = static_cast<Opcode>(opcode);
  if ((b1 & 0x80) == 0) {
    error = fail(1002, "a client's frames must be masked");
    return ParseStep::kError;
  }
  std::uint64_t length = b1 & 0x7F;
  std::size_t at = 2;
  if (is_control(op) && length > kMaxControlPayload) {
    error = fail(1002, "a control frame carries at most 125 bytes");
    return ParseStep::kError;
  }
  if (is_control(op) && !fin) {
    error = fail(1002, "a control frame cannot be fragmented");
    return ParseStep::kError;
  }
  if (length == 126) {
    if (in.size() < 4) {
      return ParseStep::kNeedMore;
    }
    length =
        (std::uint64_t{static_cast<std::uint8_t>(in[2])} << 8) | static_cast<std::uint8_t>(in[3]);
    at = 4;
    if (length < 126) {
      error = fail(1002, "a frame length must use the shortest encoding");
      return ParseStep::kError;
    }
  } else if (length == 127) {
    if (in.size() < 10) {
      return ParseStep::kNeedMore;
    }
    length = 0;
    for (std::size_t i = 2; i < 10; ++i) {
      length = (length << 8) | static_cast<std::uint8_t>(in[i]);
    }
    at = 10;
    if ((length >> 63) != 0) {
      error = fail(1002, "a 64-bit frame length must have its top bit clear");
      return ParseStep::kError;
    }
    if (length <= 0xFFFF) {
      error = fail(1002, "a frame length must use the shortest encoding");
      return ParseStep::kError;
    }
  }
  if (length > max_payload) {
    error = fail(1009, "a frame of " + std::to_string(length) + " bytes exceeds the limit of " +
                           std::to_string(max_payload));
    return ParseStep::kError;
  }
  if (in.size() < at + 4 || in.size() - at - 4 < length) {
    return ParseStep::kNeedMore;
  }
  std::array<std::uint8_t, 4> mask{};
  for (std::size_t i = 0; i < 4; ++i) {
    mask[i] = static_cast<std::uint8_t>(in[at + i]);
  }
  at += 4;
  frame.opcode = op;
  frame.fin = fin;
  frame.payload.assign(in.substr(at, static_cast<std::size_t>(length)));
  for (std::size_t i = 0; i < frame.payload.size(); ++i) {
    frame.payload[i] = static_cast<char>(static_cast<std::uint8_t>(frame.payload[i]) ^ mask[i & 3]);
  }
  consumed = at + static_cast<std::size_t>(length);
  return ParseStep::kFrame;
}

std::string encode_frame(Opcode opcode, std::string_view payload, bool fin) {
  std::string out = frame_header(opcode, payload.size(), fin, false);
  out.append(payload);
  return out;
}

std::string encode_masked_frame(Opcode opcode, std::string_view payload,
                                const std::array<std::uint8_t, 4>& mask, bool fin) {
  std::string out = frame_header(opcode, payload.size(), fin, true);
  for (std::uint8_t m : mask) {
    out += static_cast<char>(m);
  }
  const std::size_t start = out.size();
  out.append(payload);
  for (std::size_t i = 0; i < payload.size(); ++i) {
    out[start + i] = static_cast<char>(static_cast<std::uint8_t>(out[start + i]) ^ mask[i & 3]);
  }
  return out;
}

std::string close_payload(std::uint16_t code, std::string_view reason) {
  std::string out;
  out += static_cast<char>((code >> 8) & 0xFF);
  out += static_cast<char>(code & 0xFF);
  std::string_view cut = reason.substr(0, std::min<std::size_t>(reason.size(), 123));
  // Never half a character: the reason must stay UTF-8.
  auto whole = utf8_prefix(cut, false);
  out.append(cut.substr(0, whole.value_or(0)));
  return out;
}

bool sendable_close_code(std::uint16_t code) {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
         (code >= 3000 && code <= 4999);
}

bool parse_close_payload(std::string_view payload, CloseBody& body, FrameError& error) {
  body = CloseBody{};
  if (payload.empty()) {
    return true;
  }
  if (payload.size() == 1) {
    error = fail(1002, "a close frame's body is a two-byte code and a reason");
    return false;
  }
  body.code = static_cast<std::uint16_t>((static_cast<std::uint8_t>(payload[0]) << 8) |
                                         static_cast<std::uint8_t>(payload[1]));
  if (!sendable_close_code(body.code)) {
    error = fail(1002, "close code " + std::to_string(body.code) + " may not be sent");
    return false;
  }
  const std::string_view reason = payload.substr(2);
  if (utf8_prefix(reason, true) != reason.size()) {
    error = fail(1007, "a close reason must be UTF-8");
    return false;
  }
  body.reason.assign(reason);
  return true;
}

std::optional<std::size_t> utf8_prefix(std::string_view text, bool complete) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      lo = c == 0xE0 ? 0xA0 : 0x80;  // no overlong forms
      hi = c == 0xED ? 0x9F : 0xBF;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      lo = c == 0xF0 ? 0x90 : 0x80;  // no overlong forms
      hi = c == 0xF4 ? 0x8F : 0xBF;  // nothing past U+10FFFF
    } else {
      return std::nullopt;
    }
    for (std::size_t k = 1; k < len; ++k) {
      if (i + k >= text.size()) {
        // A character cut by the end: fine while more may follow.
        if (complete) {
          return std::nullopt;
        }
        return i;
      }
      const auto next = static_cast<unsigned char>(text[i + k]);
      const unsigned char low = k == 1 ? lo : 0x80;
      const unsigned char high = k == 1 ? hi : 0xBF;
      if (next < low || next > high) {
        return std::nullopt;
      }
    }
    i += len;
  }
  return i;
}

MessageAssembler::Outcome MessageAssembler::add(Frame frame) {
  Outcome out;
  if (is_control(frame.opcode)) {
    out.kind = Kind::kControl;
    out.opcode = frame.opcode;
    out.message = std::move(frame.payload);
    return out;
  }
  if (frame.opcode == Opcode::kContinuation) {
    if (!in_message_) {
      out.kind = Kind::kError;
      out.error = fail(1002, "a continuation frame without a message to continue");
      return out;
    }
  } else {
    if (in_message_) {
      out.kind = Kind::kError;
      out.error = fail(1002, "a new message began before the last one's final fragment");
      return out;
    }
    in_message_ = true;
    opcode_ = frame.opcode;
    partial_.clear();
    checked_ = 0;
  }
  if (frame.payload.size() > max_message_ ||
      partial_.size() > max_message_ - frame.payload.size()) {
    out.kind = Kind::kError;
    out.error =
        fail(1009, "a message exceeds the limit of " + std::to_string(max_message_) + " bytes");
    return out;
  }
  partial_.append(frame.payload);
  if (opcode_ == Opcode::kText) {
    // Fail fast (§8.1): each fragment is checked as it arrives, from the
    // last whole character on.
    auto whole = utf8_prefix(std::string_view(partial_).substr(checked_), frame.fin);
    if (!whole || (frame.fin && checked_ + *whole != partial_.size())) {
      out.kind = Kind::kError;
      out.error = fail(1007, "a text message must be UTF-8");
      return out;
    }
    checked_ += *whole;
  }
  if (!frame.fin) {
    return out;
  }
  in_message_ = false;
  out.kind = Kind::kMessage;
  out.opcode = opcode_;
  out.message = std::move(partial_);
  partial_.clear();
  checked_ = 0;
  return out;
}

}  // namespace lemon::net::ws
