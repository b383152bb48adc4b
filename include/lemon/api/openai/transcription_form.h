// The form audio/transcriptions takes (docs/api.md): OpenAI's fields plus
// whisper-server's own request fields, which a whispercpp model passes
// through. Pure checks over a parsed form; any thread.
#pragma once

#include <string>
#include <vector>

#include "lemon/core/error.h"
#include "lemon/http/multipart.h"

namespace lemon::api {

// OK, or kInvalidRequest naming the first field the route does not take, a
// missing or empty `file` or `model`, or an unknown `response_format`.
Status check_transcription_form(const std::vector<http::MultipartPart>& parts);

// The Content-Type the client gets for the form's `response_format`, or ""
// to keep the backend's. `text` is text/plain: whisper-server labels it
// text/html, which a browser would render as a page of the router's origin.
std::string transcription_content_type(const std::vector<http::MultipartPart>& parts);

}  // namespace lemon::api
