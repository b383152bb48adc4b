// lemon-bench: measures what lemonade-router costs, side by side with going
// directly to the same backend (issue #4). Prints a table and writes JSON.
//
//   lemon-bench [--quick] [--out FILE] [--router BIN] [--fakes DIR] [--only PART ...]
//               [--skip-fake]
//   lemon-bench --validate FILE      (checks a report; used by the smoke test)
//   lemon-bench --check [--out FILE] (the CI guard: bench/guard.h)
//
// With LLAMA_SERVER (a real llama-server) and BENCH_MODEL (a GGUF) set, the
// request and streaming measurements also run against the real backend,
// labelled as such.
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_env.h"
#include "guard.h"
#include "lemon/core/log.h"
#include "report.h"
#include "scenarios.h"

namespace {

nlohmann::json machine() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::string cpu = "unknown";
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  utsname u{};
  ::uname(&u);
  return {{"cpu", cpu}, {"cores", ::sysconf(_SC_NPROCESSORS_ONLN)}, {"kernel", u.release}};
}

// The measurements, in order, by the name --only takes.
struct Part {
  const char* name;
  void (*measure)(bench::BenchEnv&, const bench::Settings&, bench::Report&);
  bool fake_only;  // needs the fake backends (knobs, a fake hub)
};
const Part kParts[] = {{"requests", bench::measure_non_streaming, false},
                       {"streaming", bench::measure_streaming, false},
                       {"queued", bench::measure_queued, false},
                       {"http_layer", bench::measure_http_layer, false},
                       {"sessions", bench::measure_sessions, false},
                       {"switch", bench::measure_model_switch, true},
                       {"control", bench::measure_control_plane, true},
                       {"memory", bench::measure_memory, true},
                       {"download", bench::measure_download, true}};

void run_suite(bench::BenchEnv& env, const bench::Settings& s, const std::set<std::string>& only,
               bench::Report& report) {
  for (const char* m : {"bench", "a", "b", "m1", "m2", "m3", "m4", "m5", "sess"}) {
    env.add_model(m);
  }
  for (const Part& part : kParts) {
    if ((only.empty() || only.count(part.name) > 0) && (s.fake || !part.fake_only)) {
      part.measure(env, s, report);
    }
  }
  env.stop_router();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("lemon-bench: lemonade-router versus going direct");
  bench::Settings s;
  std::string out = "bench/results/latest.json";
  std::string validate;
  std::string router_bin = LEMON_BENCH_ROUTER;
  std::string fakes = LEMON_BENCH_FAKES;
  app.add_flag("--quick", s.quick, "Tiny counts (smoke test); figures are meaningless");
  app.add_option("--out", out, "Where to write the JSON report");
  app.add_option("--router", router_bin, "lemonade-router binary");
  app.add_option("--fakes", fakes, "Directory of the fake backends");
  app.add_option("--validate", validate, "Check a JSON report and exit");
  std::vector<std::string> only_list;
  app.add_option("--only", only_list, "Run only these measurements (all by default)")
      ->check(CLI::IsMember([] {
        std::vector<std::string> names;
        for (const Part& part : kParts) {
          names.emplace_back(part.name);
        }
        return names;
      }()));
  app.add_flag("--skip-fake", s.skip_fake,
               "With LLAMA_SERVER and BENCH_MODEL: measure only the real backend");
  bool check = false;
  app.add_flag("--check", check,
               "The CI guard: a few figures against fixed bounds, exit 1 on a gross regression");
  CLI11_PARSE(app, argc, argv);
  lemon::init_logging("error");
  const std::set<std::string> only(only_list.begin(), only_list.end());

  if (!validate.empty()) {
    std::ifstream in(validate);
    auto j = nlohmann::json::parse(in, nullptr, false);
    std::string problem = j.is_discarded() ? "not JSON" : bench::validate_report(j);
    if (!problem.empty()) {
      std::cerr << validate << ": " << problem << "\n";
      return 1;
    }
    std::cout << validate << ": well-formed report\n";
    return 0;
  }
  if (check) {
    std::filesystem::path placeholder =
        std::filesystem::temp_directory_path() /
        ("lemon-bench-model-" + std::to_string(::getpid()) + ".gguf");
    std::ofstream(placeholder) << "GGUF";
    int status = 1;
    try {
      bench::BenchEnv env({router_bin, fakes, fakes + "/llama-server", placeholder.string()});
      status = bench::run_guard(env, s, app.count("--out") > 0 ? out : std::string());
    } catch (const std::exception& e) {
      std::cerr << "lemon-bench --check: " << e.what() << "\n";
    }
    std::filesystem::remove(placeholder);
    return status;
  }
  if (s.quick) {
    s.duration = std::chrono::milliseconds(150);
    s.streams = 8;
    s.switches = 2;
  }

  std::filesystem::path placeholder = std::filesystem::temp_directory_path() /
                                      ("lemon-bench-model-" + std::to_string(::getpid()) + ".gguf");
  std::ofstream(placeholder) << "GGUF";
  nlohmann::json runs = nlohmann::json::array();
  int status = 0;
  try {
    bench::Report fake_report;
    {
      bench::BenchEnv env({router_bin, fakes, fakes + "/llama-server", placeholder.string()});
      if (!s.skip_fake) {
        run_suite(env, s, only, fake_report);
      }
    }
    fake_report.data()["machine"] = machine();
    fake_report.data()["mode"] = s.quick ? "quick" : "full";
    fake_report.data()["backend"] = "fake llama-server";
    std::cout << "== lemonade-router vs direct, fake llama-server"
              << (s.quick ? " (quick: figures are meaningless)" : "") << " ==\n";
    fake_report.print();
    nlohmann::json doc = fake_report.to_json();

    const char* real = std::getenv("LLAMA_SERVER");
    const char* model = std::getenv("BENCH_MODEL");
    if (real != nullptr && model != nullptr) {
      bench::Settings rs = s;
      rs.fake = false;
      bench::Report real_report;
      {
        bench::BenchEnv env({router_bin, fakes, real, model});
        run_suite(env, rs, only, real_report);
      }
      std::cout << "\n== lemonade-router vs direct, real llama-server (" << real << ", " << model
                << ") ==\n";
      real_report.print();
      real_report.data()["backend"] = std::string("real llama-server: ") + real;
      doc["real_llama_server"] = real_report.to_json();
    }
    std::filesystem::path out_path(out);
    if (out_path.has_parent_path()) {
      std::filesystem::create_directories(out_path.parent_path());
    }
    std::ofstream(out_path) << doc.dump(2) << "\n";
    std::cout << "\nwrote " << out << "\n";
  } catch (const std::exception& e) {
    std::cerr << "lemon-bench: " << e.what() << "\n";
    status = 1;
  }
  std::filesystem::remove(placeholder);
  return status;
}
