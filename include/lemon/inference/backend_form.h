// The multipart/form-data body the router sends a backend for an upload
// route whose form it rewrote (image edits, transcriptions to a remote
// endpoint).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lemon/backends/wrapped_server.h"

namespace lemon::inference {

// A multipart/form-data body of `fields` with `boundary` (which must not
// occur in any field's data; make_boundary() picks one that does not).
std::string write_multipart(const std::vector<FormField>& fields, std::string_view boundary);
std::string make_boundary(const std::vector<FormField>& fields);

}  // namespace lemon::inference
