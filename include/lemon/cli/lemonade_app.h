// run_lemonade(): `lemonade`, Lemonade 11's client (lemonade-sdk/lemonade
// v11.7.0, docs/guide/cli.md and src/cpp/cli/), against lemonade-router.
// Global options --host, --port, --api-key, --discovery/--no-discovery
// (LEMONADE_HOST, a name or a URL; LEMONADE_PORT; LEMONADE_API_KEY;
// LEMONADE_ADMIN_API_KEY wins over both keys). Without --host/--port the
// server is found (discovery.h): GET /live on 13305 and on 8000 (this
// router's default), then a beacon. LEMONADE_BEACON_PORT, the router's
// setting, moves both the probe and the listen to that port (tests, or a
// router told to send elsewhere). Returns the exit code: 0, 1 a failure,
// 2 a usage error or a verb this server does not offer.
#pragma once

namespace lemon::cli {

int run_lemonade(int argc, char** argv);

}  // namespace lemon::cli
