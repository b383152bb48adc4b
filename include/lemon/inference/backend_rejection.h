// What kind of refusal a backend's HTTP error answer is,
// decided once, where the answer is read; code above branches on the enum.
//
// kTemplate: llama-server could not render the chat with the model's
// template. Its template engine reports a template's raise_exception() as
// "Jinja Exception: <text>" (400 invalid_request_error); builds with the
// older engine pass the text alone, so the common templates' own texts are
// recognised too ("... roles must alternate ...", "System message must be at
// the beginning", "Cannot pass both content and thinking ...").
//
// Thread-safety: pure function.
#pragma once

#include <string_view>

namespace lemon::inference {

enum class BackendRejection {
  kOther,
  kTemplate,  // the chat template rejected the messages' shape
};

BackendRejection classify_backend_rejection(int status, std::string_view body);

}  // namespace lemon::inference
