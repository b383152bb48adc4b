// WsClient: a WebSocket client over a RawClient whose every frame the test
// controls (masked or not, fragmented, oversized), for the server's
// WebSocket tests. Its framing is written here, apart from the server's
// codec, so the two check each other. Reads are guarded by RawClient's
// timeout against hangs, never used to synchronize.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/raw_client.h"

namespace lemon::testing {

class WsClient {
 public:
  // RFC 6455's example key; its accept value is kExampleAccept.
  static constexpr const char* kExampleKey = "dGhlIHNhbXBsZSBub25jZQ==";
  static constexpr const char* kExampleAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

  explicit WsClient(int port) : raw_(port), port_(port) {}

  // The upgrade request for `target` with `headers` (added after the
  // handshake's own, which `headers` may replace by naming them), then the
  // response's head. On 101 the socket is a WebSocket from then on.
  RawClient::Response handshake(
      const std::string& target,
      const std::vector<std::pair<std::string, std::string>>& headers = {},
      const std::string& extra_bytes = "") {
    std::vector<std::pair<std::string, std::string>> all = {
        {"Host", "127.0.0.1:" + std::to_string(port_)},
        {"Upgrade", "websocket"},
        {"Connection", "Upgrade"},
        {"Sec-WebSocket-Key", kExampleKey},
        {"Sec-WebSocket-Version", "13"}};
    for (const auto& [name, value] : headers) {
      bool replaced = false;
      for (auto& [n, v] : all) {
        if (lower(n) == lower(name)) {
          v = value;
          replaced = true;
        }
      }
      if (!replaced) {
        all.emplace_back(name, value);
      }
    }
    std::string request = "GET " + target + " HTTP/1.1\r\n";
    for (const auto& [name, value] : all) {
      if (!value.empty()) {
        request += name + ": " + value + "\r\n";
      }
    }
    request += "\r\n";
    raw_.send(request + extra_bytes);
    RawClient::Response r;
    r.head = raw_.read_until("\r\n\r\n");
    if (r.head.size() >= 12) {
      r.status = std::stoi(r.head.substr(9, 3));
    }
    if (r.status != 101) {
      std::string length = RawClient::header(r.head, "content-length");
      r.body = raw_.take(length.empty() ? 0 : std::stoul(length));
    }
    return r;
  }

  // One frame as a client writes it (masked unless `masked` is false).
  static std::string frame(std::uint8_t opcode, std::string_view payload, bool fin = true,
                           bool masked = true) {
    std::string out;
    out += static_cast<char>((fin ? 0x80 : 0) | opcode);
    const std::uint8_t mask_bit = masked ? 0x80 : 0;
    if (payload.size() < 126) {
      out += static_cast<char>(mask_bit | payload.size());
    } else if (payload.size() <= 0xFFFF) {
      out += static_cast<char>(mask_bit | 126);
      out += static_cast<char>(payload.size() >> 8);
      out += static_cast<char>(payload.size() & 0xFF);
    } else {
      out += static_cast<char>(mask_bit | 127);
      for (int shift = 56; shift >= 0; shift -= 8) {
        out += static_cast<char>((static_cast<std::uint64_t>(payload.size()) >> shift) & 0xFF);
      }
    }
    const char mask[4] = {0x37, static_cast<char>(0xfa), 0x21, 0x3d};
    if (masked) {
      out.append(mask, 4);
    }
    for (std::size_t i = 0; i < payload.size(); ++i) {
      out += masked ? static_cast<char>(payload[i] ^ mask[i % 4]) : payload[i];
    }
    return out;
  }

  bool send_raw(std::string_view bytes) { return raw_.send(bytes); }
  bool send_frame(std::uint8_t opcode, std::string_view payload, bool fin = true,
                  bool masked = true) {
    return raw_.send(frame(opcode, payload, fin, masked));
  }
  bool send_text(std::string_view text) { return send_frame(0x1, text); }
  bool send_json(const nlohmann::json& j) { return send_text(j.dump()); }
  bool send_close(std::uint16_t code, std::string_view reason = "") {
    std::string payload;
    payload += static_cast<char>(code >> 8);
    payload += static_cast<char>(code & 0xFF);
    payload.append(reason);
    return send_frame(0x8, payload);
  }

  struct Frame {
    std::uint8_t opcode = 0;
    bool fin = true;
    bool masked = false;
    std::string payload;
    // A close frame's code (1005 when it has none).
    std::uint16_t close_code() const {
      return payload.size() >= 2
                 ? static_cast<std::uint16_t>((static_cast<std::uint8_t>(payload[0]) << 8) |
                                              static_cast<std::uint8_t>(payload[1]))
                 : 1005;
    }
    std::string close_reason() const { return payload.size() > 2 ? payload.substr(2) : ""; }
  };

  // The next frame the server sends; nullopt on EOF or the timeout.
  std::optional<Frame> read_frame() {
    std::string head = raw_.take(2);
    if (head.size() < 2) {
      return std::nullopt;
    }
    Frame f;
    f.opcode = static_cast<std::uint8_t>(head[0]) & 0x0F;
    f.fin = (static_cast<std::uint8_t>(head[0]) & 0x80) != 0;
    f.masked = (static_cast<std::uint8_t>(head[1]) & 0x80) != 0;
    std::uint64_t length = static_cast<std::uint8_t>(head[1]) & 0x7F;
    if (length >= 126) {
      std::string ext = raw_.take(length == 126 ? 2 : 8);
      length = 0;
      for (char c : ext) {
        length = (length << 8) | static_cast<std::uint8_t>(c);
      }
    }
    if (f.masked) {
      raw_.take(4);
    }
    f.payload = raw_.take(static_cast<std::size_t>(length));
    if (f.payload.size() != length) {
      return std::nullopt;
    }
    return f;
  }

  // The next text message's JSON, answering pings and skipping pongs;
  // nullopt on a close frame, EOF or the timeout.
  std::optional<nlohmann::json> read_json() {
    for (;;) {
      auto f = read_frame();
      if (!f || f->opcode == 0x8) {
        last_close_ = f;
        return std::nullopt;
      }
      if (f->opcode == 0x9) {
        send_frame(0xA, f->payload);
        continue;
      }
      if (f->opcode == 0x1) {
        return nlohmann::json::parse(f->payload, nullptr, false);
      }
    }
  }
  // Text messages until one of `type` arrives (returned), the rest dropped.
  std::optional<nlohmann::json> read_until_type(const std::string& type) {
    for (;;) {
      auto j = read_json();
      if (!j || (j->is_object() && j->value("type", "") == type)) {
        return j;
      }
    }
  }
  // The close frame read_json() stopped at, if any.
  const std::optional<Frame>& last_close() const { return last_close_; }

  RawClient& raw() { return raw_; }

 private:
  static std::string lower(std::string s) {
    for (auto& c : s) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return s;
  }

  RawClient raw_;
  int port_;
  std::optional<Frame> last_close_;
};

}  // namespace lemon::testing
