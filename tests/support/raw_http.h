// Raw HTTP/1.1 over a loopback socket, for requests whose every byte the test
// controls: no Content-Type added behind its back, chunked or oversized
// bodies, arbitrary Origin/Authorization headers, hand-built multipart forms.
// One request per connection (Connection: close); the response is read until
// the server closes it.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "support/http_client.h"
#include "support/test_env.h"

namespace lemon::testing {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// The request text: "METHOD path HTTP/1.1", Host: 127.0.0.1:port (unless
// `headers` has a Host), `headers` in order, Connection: close, then
// Content-Length: body.size() (unless `headers` has a Transfer-Encoding, or
// the body is empty and the method is GET, HEAD or OPTIONS), the empty line
// and `body` as given.
std::string raw_request_text(int port, const std::string& method, const std::string& path,
                             const HeaderList& headers, const std::string& body = "");

// `body` in chunked transfer coding, `chunk_size` bytes a chunk, with the
// terminating zero-length chunk.
std::string chunked_body(const std::string& body, std::size_t chunk_size);

// Sends `request` and reads one response until the server closes the
// connection. Sending stops early if the response starts to arrive first (a
// server may refuse a body before reading it: 413); the socket's write side is
// then shut down so the server sees the end. status == 0 and `error` say why
// when there was no complete response head.
HttpReply raw_exchange(int port, const std::string& request,
                       std::chrono::milliseconds timeout = kWait);

// raw_exchange(port, raw_request_text(...)).
HttpReply raw_request(int port, const std::string& method, const std::string& path,
                      const HeaderList& headers, const std::string& body = "");

// One part of a multipart/form-data body; a part with a filename is a file.
struct FormPart {
  std::string name;
  std::string data;
  std::string filename;      // empty: a plain field
  std::string content_type;  // empty: none sent
};

// A plain field, and a file part.
FormPart form_field(const std::string& name, const std::string& value);
FormPart form_file(const std::string& name, const std::string& data, const std::string& filename,
                   const std::string& content_type);

inline constexpr const char* kFormBoundary = "----lemon-test-boundary-7MA4YWxkTrZu0gW";

// The multipart/form-data body of `parts` with `boundary`.
std::string multipart_body(const std::vector<FormPart>& parts,
                           const std::string& boundary = kFormBoundary);
// "multipart/form-data; boundary=<boundary>"
std::string multipart_content_type(const std::string& boundary = kFormBoundary);

// A 16 kHz mono 16-bit PCM WAV file with `samples` samples of silence.
std::string wav_bytes(std::size_t samples);

}  // namespace lemon::testing
