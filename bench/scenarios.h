// The measurements of issue #4, each comparing the router with the same
// backend addressed directly, in the same run.
#pragma once

#include <chrono>

#include "bench_env.h"
#include "report.h"

namespace bench {

struct Settings {
  bool quick = false;                        // tiny counts for the smoke test
  bool fake = true;                          // fake backends (false: a real llama-server)
  bool skip_fake = false;                    // --skip-fake: only the real llama-server's run
  std::chrono::milliseconds duration{2000};  // per load measurement
  int streams = 256;                         // concurrent streams for the control-plane test
  int switches = 20;                         // model switches measured
};

void measure_non_streaming(BenchEnv& env, const Settings& s, Report& report);
// Issue #27: eight clients on one llama.cpp slot (the router's queue against
// llama-server's), and TTFB with eight concurrent streams.
void measure_queued(BenchEnv& env, const Settings& s, Report& report);
void measure_streaming(BenchEnv& env, const Settings& s, Report& report);
// The HTTP layer (issue #11 §1): our router against a minimal cpp-httplib
// pass-through proxy, both in front of the same backend, non-streaming.
void measure_http_layer(BenchEnv& env, const Settings& s, Report& report);
void measure_model_switch(BenchEnv& env, const Settings& s, Report& report);
void measure_control_plane(BenchEnv& env, const Settings& s, Report& report);
void measure_memory(BenchEnv& env, const Settings& s, Report& report);
// Issue #13 §4: TTFT on the last turn of a conversation, session vs stateless.
void measure_sessions(BenchEnv& env, const Settings& s, Report& report);
// Issue #7: pulling a large file from the fake hub, against curl -o.
void measure_download(BenchEnv& env, const Settings& s, Report& report);

}  // namespace bench
