// lemonade run, chat and bench: a model loaded (pulled first if needed),
// then the web page, a terminal chat, or chat completions timed.
#include <unistd.h>

#include <cstdio>
#include <iomanip>
#include <iostream>

#include "lemon/cli/commands.h"
#include "lemon/cli/lemonade_commands.h"

namespace lemon::cli {
namespace {

struct BenchRow {
  std::string model;
  int prompt_tokens = 0;  // as asked
  int measured_prompt = 0;
  double ttft_ms = 0;
  double tps = 0;
  int runs = 0;
};

// One chat completion's time to first token (ms) and generation speed
// (tokens/s): llama.cpp's `timings`, else Lemonade's `usage` fields.
bool read_speed(const nlohmann::json& reply, double& ttft_ms, double& tps, int& prompt_n) {
  if (reply.contains("timings") && reply["timings"].is_object()) {
    const auto& t = reply["timings"];
    ttft_ms = t.value("prompt_ms", 0.0);
    tps = t.value("predicted_per_second", 0.0);
    prompt_n = t.value("prompt_n", 0);
    return true;
  }
  if (reply.contains("usage") && reply["usage"].is_object()) {
    const auto& u = reply["usage"];
    if (u.contains("decoding_speed_tps")) {
      ttft_ms = u.value("prefill_duration_ttft", 0.0) * 1000.0;
      tps = u.value("decoding_speed_tps", 0.0);
      prompt_n = u.value("prompt_tokens", 0);
      return true;
    }
  }
  return false;
}

void draw_progress(int done, int total, const std::string& what) {
  constexpr int kWidth = 30;
  const int filled = total > 0 ? done * kWidth / total : kWidth;
  std::cerr << "\r[" << std::string(static_cast<std::size_t>(filled), '#')
            << std::string(static_cast<std::size_t>(kWidth - filled), '-') << "] " << done << "/"
            << total << " " << what << "\x1b[K" << std::flush;
}

}  // namespace

int verb_run(const LemonadeLine& line, const LemonadeTarget& target) {
  if (line.model.empty()) {
    return fail("name a model: lemonade run MODEL (lemonade list shows them)");
  }
  nlohmann::json body = line.load_options;
  body["save_options"] = line.save_options;
  if (line.pinned) {
    body["pinned"] = true;
  }
  if (int code = pull_if_needed_and_load(line.model, body, target); code != 0) {
    return code;
  }
  if (line.chat_cli) {
    return chat_with(target.client(), line.model, "");
  }
  open_in_browser(target.url() + "/");
  return 0;
}

int verb_chat(const LemonadeLine& line, const LemonadeTarget& target) {
  const ServerClient client = target.client();
  std::string model = line.model;
  if (model.empty()) {
    auto health = client.get("/api/v1/health");
    if (!health.ok()) {
      return fail_request("fetching health status", health, target);
    }
    const auto loaded = health.json().value("model_loaded", nlohmann::json());
    if (!loaded.is_string() || loaded.get<std::string>().empty()) {
      return fail("no model is loaded: name one, lemonade chat MODEL");
    }
    model = loaded.get<std::string>();
  }
  // Status lines go to stderr, so a piped answer stays clean.
  CommandLine cl;
  cl.model = model;
  if (Status ready = ensure_model_ready(client, cl); !ready.ok()) {
    return fail(ready.error().message());
  }
  return chat_with(client, model, line.system);
}

int verb_bench(const LemonadeLine& line, const LemonadeTarget& target) {
  const ServerClient client = target.client();
  std::vector<BenchRow> rows;
  const int total = static_cast<int>(line.args.size() * line.prompt_tokens.size()) * line.runs;
  int done = 0;
  for (const std::string& model : line.args) {
    CommandLine cl;
    cl.model = model;
    if (Status ready = ensure_model_ready(client, cl); !ready.ok()) {
      return fail(ready.error().message());
    }
    for (int size : line.prompt_tokens) {
      BenchRow row{.model = model, .prompt_tokens = size};
      std::string prompt;
      for (int i = 0; i < size; ++i) {
        prompt += "word ";
      }
      for (int run = 0; run < line.runs; ++run) {
        draw_progress(done, total, model + " @ " + std::to_string(size));
        nlohmann::json body = {{"model", model},
                               {"messages", {{{"role", "user"}, {"content", prompt}}}},
                               {"max_completion_tokens", line.max_tokens},
                               {"temperature", 0},
                               {"stream", false}};
        auto reply = client.post("/api/v1/chat/completions", body, std::chrono::minutes(10));
        if (!reply.ok()) {
          std::cerr << std::endl;
          return fail_request("benchmarking " + model, reply, target);
        }
        double ttft = 0;
        double tps = 0;
        int prompt_n = 0;
        if (read_speed(reply.json(), ttft, tps, prompt_n)) {
          row.ttft_ms += ttft;
          row.tps += tps;
          row.measured_prompt = prompt_n;
          ++row.runs;
        }
        ++done;
      }
      if (row.runs > 0) {
        row.ttft_ms /= row.runs;
        row.tps /= row.runs;
      }
      rows.push_back(row);
    }
  }
  draw_progress(done, total, "done");
  std::cerr << std::endl;
  if (line.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows) {
      out.push_back({{"model", r.model},
                     {"prompt_tokens", r.prompt_tokens},
                     {"measured_prompt_tokens", r.measured_prompt},
                     {"runs", r.runs},
                     {"ttft_ms", r.ttft_ms},
                     {"tokens_per_second", r.tps}});
    }
    std::cout << out.dump(2) << std::endl;
    return 0;
  }
  std::cout << std::left << std::setw(40) << "Model" << std::setw(16) << "Prompt tokens"
            << std::setw(12) << "TTFT (ms)"
            << "Tokens/s\n";
  char ttft[32];
  char tps[32];
  for (const auto& r : rows) {
    std::snprintf(ttft, sizeof ttft, "%.1f", r.ttft_ms);
    std::snprintf(tps, sizeof tps, "%.1f", r.tps);
    std::cout << std::setw(40) << r.model << std::setw(16) << r.prompt_tokens << std::setw(12)
              << (r.runs > 0 ? ttft : "n/a") << (r.runs > 0 ? tps : "n/a") << "\n";
  }
  std::cout.flush();
  return 0;
}

}  // namespace lemon::cli
