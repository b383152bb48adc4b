// The CI guard (issue #27 §4): `lemon-bench --check`. A few figures of the
// router against the fake backends, each beside what it is compared with in
// the same run, and a bound far enough from today's figure that a shared
// CI machine's noise never crosses it: it fails only on a gross regression
// (docs/benchmarks.md "The CI guard" gives each bound's slack).
#pragma once

#include "bench_env.h"
#include "scenarios.h"

namespace bench {

// Runs the guard's measurements, prints every figure with its bound, and
// returns 0 when all are within their bounds, 1 otherwise. Writes the
// figures as JSON to `out` when it is not empty.
int run_guard(BenchEnv& env, Settings s, const std::string& out);

}  // namespace bench
