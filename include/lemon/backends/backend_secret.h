// A backend process's secret: 256 bits from the OS's random
// number generator, as 64 lowercase hex digits, made anew for every process
// the router spawns. The recipe hands it to its program where other users
// cannot read it (llama-server's LLAMA_API_KEY, in the child's environment)
// or, where the program offers nothing better, as an unguessable path
// (whisper-server's --request-path). It is never logged.
//
// Thread-safety: a pure function.
#pragma once

#include <string>

namespace lemon {

std::string make_backend_secret();

}  // namespace lemon
