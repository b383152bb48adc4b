// Finding a program the way a shell would, without a shell: the first
// executable file of that name in the directories of $PATH.
//
// Thread-safety: reads the environment only; call from any thread.
#pragma once

#include <string>

namespace lemon {

// The path of the first executable `name` on $PATH, or "" when none is.
std::string find_on_path(const std::string& name);

}  // namespace lemon
