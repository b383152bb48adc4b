// llama-server's router child mode (tools/server/server-models.cpp,
// server_child), imitated: with LLAMA_SERVER_ROUTER_PORT in the environment
// the fake writes `cmd_child_to_router:state:` lines on stdout as it loads
// ({"state":"loading","payload":{"stages","current","value"}}: text_model,
// then mmproj_model with --mmproj) and once it is ready ({"state":"ready",
// "payload": its /v1/models entry}). From then on it reads its stdin:
// `cmd_router_to_child:exit` shuts it down cleanly (exit 0); end of file
// makes it exit 1 at once. Like the real one, a SIGTERM after the load
// stops serving but the process exits only once its stdin ends (status 1)
// or brings the exit command (status 0).
#pragma once

#include "fake_util.h"

namespace fake {

// True when the environment asks for child mode.
bool child_mode_requested();

// Installs the hooks on the runtime. `info` is the ready line's payload.
void enable_child_mode(json info, bool has_mmproj);

}  // namespace fake
