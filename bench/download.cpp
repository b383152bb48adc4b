// The download measurement of issue #7: the router pulling one large file
// from the fake hub on loopback, against `curl -o` fetching the same file
// in the same run, with the router's RSS and /health latency sampled while
// the download runs.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "lemon/core/error.h"
#include "scenarios.h"

namespace bench {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

void write_random_file(const fs::path& p, std::uint64_t size) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  std::mt19937_64 rng(7);
  std::vector<std::uint64_t> buf(1u << 17);
  for (std::uint64_t left = size; left > 0;) {
    for (auto& w : buf) {
      w = rng();
    }
    std::uint64_t n = std::min<std::uint64_t>(left, buf.size() * 8);
    out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(n));
    left -= n;
  }
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) {
    return 0;
  }
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

}  // namespace

void measure_download(BenchEnv& env, const Settings& s, Report& report) {
  const std::uint64_t size = s.quick ? (32ull << 20) : (1ull << 30);
  const fs::path hub_root = fs::path(env.root()) / "hub-repos";
  write_random_file(hub_root / "bench" / "big-GGUF" / "big-Q4_0.gguf", size);
  int hub = env.start_fake_hub(hub_root.string());
  // The fake hashes the file on the first listing: do it before timing.
  auto listing = get_json(hub, "/api/models/bench/big-GGUF?blobs=true");
  const std::string commit = listing.value("sha", "");
  const std::string url = "http://127.0.0.1:" + std::to_string(hub) + "/bench/big-GGUF/resolve/" +
                          commit + "/big-Q4_0.gguf";

  // Rounds alternate curl and the router, each after sync(2) so neither
  // pays for the other's dirty pages; the best round of each counts.
  const int rounds = s.quick ? 1 : 3;
  const fs::path curl_out = fs::path(env.root()) / "curl.out";
  std::string curl;
  for (const char* candidate : {"/usr/bin/curl", "/bin/curl"}) {
    if (fs::exists(candidate)) {
      curl = candidate;
      break;
    }
  }
  std::optional<double> curl_s;
  double router_s = 1e99;
  std::vector<double> health_ms;
  long rss_min = -1;
  long rss_max = -1;
  int router = env.start_router({"--log-level", "warning"},
                                {{"HF_ENDPOINT", "http://127.0.0.1:" + std::to_string(hub)}});
  const pid_t pid = env.router_pid();
  const nlohmann::json pull = {
      {"model_name", "user.big"}, {"checkpoint", "bench/big-GGUF:Q4_0"}, {"recipe", "llamacpp"}};
  std::error_code ec;
  for (int round = 0; round < rounds; ++round) {
    if (!curl.empty()) {
      ::sync();
      auto t0 = Clock::now();
      if (env.run_to_end(curl, {"-sSfL", "-o", curl_out.string(), url}) == 0) {
        double t = seconds_since(t0);
        curl_s = curl_s ? std::min(*curl_s, t) : t;
      }
      fs::remove(curl_out, ec);
    }
    ::sync();
    std::atomic<bool> done{false};
    std::thread sampler([&] {
      auto next_rss = Clock::now();
      while (!done) {
        auto t0 = Clock::now();
        get_json(router, "/api/v1/health");
        health_ms.push_back(seconds_since(t0) * 1000.0);
        if (Clock::now() >= next_rss) {
          long r = rss_kib(pid);
          rss_min = rss_min < 0 ? r : std::min(rss_min, r);
          rss_max = std::max(rss_max, r);
          next_rss += std::chrono::milliseconds(100);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));  // ~100 probes/s
      }
    });
    auto t0 = Clock::now();
    int status = post_json(router, "/api/v1/pull", pull);
    const double t = seconds_since(t0);
    done = true;
    sampler.join();
    if (status != 200) {
      throw std::runtime_error("the benchmark pull failed with HTTP " + std::to_string(status));
    }
    router_s = std::min(router_s, t);
    if (post_json(router, "/api/v1/delete", {{"model_name", "user.big"}}) != 200) {
      throw std::runtime_error("the benchmark could not delete its model");
    }
  }
  env.stop_router();
  env.stop_fake_hub();

  const double mib = static_cast<double>(size) / (1024.0 * 1024.0);
  const double router_mibs = mib / router_s;
  report.add({"download", "throughput, " + std::to_string(size >> 20) + " MiB file",
              curl_s ? std::optional<double>(mib / *curl_s) : std::nullopt, router_mibs,
              curl_s ? std::optional<double>(router_mibs / (mib / *curl_s)) : std::nullopt,
              "MiB/s (delta: ratio)"});
  report.add({"download", "router RSS during the download, min..max", std::nullopt,
              rss_min / 1024.0, (rss_max - rss_min) / 1024.0, "MiB (delta: growth)"});
  report.add({"download", "/health p99 during the download", std::nullopt,
              percentile(health_ms, 0.99), std::nullopt, "ms"});
  if (curl_s) {
    report.target(
        {"download throughput vs curl -o", router_mibs / (mib / *curl_s), 0.9, false, "ratio"});
  }
  report.target({"/health p99 during a download", percentile(health_ms, 0.99), 5, true, "ms"});
  report.target({"RSS growth during a download", (rss_max - rss_min) / 1024.0, 16, true, "MiB"});
  report.data()["download"] = {
      {"bytes", size},
      {"router_seconds", router_s},
      {"curl_seconds", curl_s ? nlohmann::json(*curl_s) : nlohmann::json()},
      {"rss_min_kib", rss_min},
      {"rss_max_kib", rss_max},
      {"health_probes", health_ms.size()},
      {"health_p50_ms", percentile(health_ms, 0.5)},
      {"health_p99_ms", percentile(health_ms, 0.99)}};
}

}  // namespace bench
