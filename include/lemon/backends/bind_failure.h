// Recognising a backend that could not bind its port, at the one place its
// output is read: llama-server prints "couldn't bind HTTP server socket,
// hostname: H, port: P" and whisper-server "couldn't bind to server socket:
// hostname=H port=P" (both on cpp-httplib's bind_to_port) before they exit 1.
// Another program took the port between the router's check and the child's
// bind; the load is retried on another port, not failed.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

namespace lemon {

// True when one of `lines` (a backend's last output) says its bind failed.
bool output_reports_bind_failure(const std::vector<std::string>& lines);

}  // namespace lemon
