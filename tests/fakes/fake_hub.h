// fake-hub: a loopback imitation of the Hugging Face hub (and of GitHub's
// release downloads) for the model-store tests and the download benchmark.
// Repositories are folders ROOT/<org>/<name>/; the hub serves the
// /api/models listing (siblings, blobId, lfs), /resolve with the CDN
// redirect hop, byte ranges, gated repositories, and fault knobs set at run
// time through /_fake/* (README.md in this directory).
#pragma once

#include <string>

namespace fake {

struct HubOptions {
  std::string root;  // the folder of repositories
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port
};

// Binds, prints "fake-hub listening on HOST:PORT" (flushed) and serves until
// SIGTERM or SIGINT, then exits the process with status 0. Returns only when
// it cannot bind (the exit status to use, after a message on stderr).
int run_hub(const HubOptions& options);

}  // namespace fake
