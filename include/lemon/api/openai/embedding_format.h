// Embeddings in the encoding the client asked for. OpenAI SDKs ask for
// base64 by default; when a backend answers with float arrays anyway, the
// router converts them (little-endian float32, base64), so every recipe
// honours encoding_format. The base64 is OpenSSL's (lemon/net/base64.h).
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lemon::api {

// The response with every `data[i].embedding` float array replaced by its
// base64 form, or nullopt when nothing needed converting (or the body is not
// an embeddings list).
std::optional<std::string> embeddings_as_base64(std::string_view response_body);

}  // namespace lemon::api
