// The session benchmark (issue #13 §4): time to first token on turn 10 of a
// conversation, kept in a session versus sent whole as stateless chat
// requests, on a server that others use too (two requests from other
// clients between turns, one after the other, as on a shared machine) and
// on a quiet one. With the fake, prompt evaluation costs a set time per
// token not reused from the slot's cache (prompt_us_per_token); a real
// llama-server spends what it spends.
#include <string>
#include <vector>

#include "lemon/net/upstream_client.h"
#include "load.h"
#include "scenarios.h"

namespace bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr int kReplyTokens = 16;

// --quick (the smoke test): three turns and a near-free prompt.
int turns(const Settings& s) {
  return s.quick ? 3 : 10;
}
// The fake: 1 ms per evaluated token, about what a small model on a CPU takes.
int prompt_us_per_token(const Settings& s) {
  return s.quick ? 10 : 1000;
}

// A user message of about `words` words, different for each (turn, salt).
std::string message(int turn, int salt, int words) {
  std::string text = "Turn " + std::to_string(turn) + " from client " + std::to_string(salt) + ":";
  for (int i = 0; i < words; ++i) {
    text += " word" + std::to_string((turn * 131 + salt * 17 + i * 7) % 997);
  }
  return text;
}

void add_fake_knobs(json& body, const Settings& s) {
  if (s.fake) {
    body["lemon_fake"] = {{"tokens", kReplyTokens},
                          {"prompt_us_per_token", prompt_us_per_token(s)}};
  }
}

struct Streamed {
  double ttft_ms = -1;  // request sent -> first content chunk
  std::string reply;
  int prompt_n = -1;  // prompt tokens the backend evaluated (its timings)
  int cache_n = -1;   // prompt tokens it reused from the slot's cache
};

// One turn's figures, per mode.
struct Turns {
  std::vector<double> ttft_ms;
  std::vector<int> evaluated;  // prompt tokens evaluated, -1 where not reported
  void add(const Streamed& r) {
    ttft_ms.push_back(r.ttft_ms);
    evaluated.push_back(r.prompt_n);
  }
};

// POSTs `body` (a streaming request) and reads the SSE answer to its end.
Streamed stream_post(int port, const std::string& path, const json& body) {
  lemon::net::UpstreamClient client("127.0.0.1", port);
  lemon::net::UpstreamRequest req;
  req.path = path;
  req.content_type = "application/json";
  const std::string text = body.dump();
  req.body = text;
  Streamed out;
  std::string pending;
  const auto t0 = Clock::now();
  auto st = client.stream(
      req, {}, [](const lemon::net::UpstreamHead& head) { return head.status == 200; },
      [&](std::string_view data) {
        pending.append(data);
        for (auto end = pending.find("\n\n"); end != std::string::npos;
             end = pending.find("\n\n")) {
          std::string event = pending.substr(0, end);
          pending.erase(0, end + 2);
          if (event.rfind("data: {", 0) != 0) {
            continue;
          }
          auto j = json::parse(event.substr(6), nullptr, false);
          if (j.is_object() && j.contains("timings") && j["timings"].is_object()) {
            out.prompt_n = j["timings"].value("prompt_n", -1);
            out.cache_n = j["timings"].value("cache_n", -1);
          }
          if (!j.is_object() || !j.contains("choices") || j["choices"].empty()) {
            continue;
          }
          const json& delta = j["choices"][0].value("delta", json::object());
          if (delta.contains("content") && delta["content"].is_string()) {
            if (out.ttft_ms < 0) {
              out.ttft_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
            }
            out.reply += delta["content"].get<std::string>();
          }
        }
        return true;
      });
  if (!st.ok()) {
    throw std::runtime_error("stream to " + path + " failed: " + st.error().message());
  }
  return out;
}

// Two requests from other clients, one after the other, each with its own
// long prompt.
void other_clients(int port, int turn, const Settings& s) {
  for (int salt : {1, 2}) {
    json body = {{"model", "user.sess"},
                 {"messages", {{{"role", "user"}, {"content", message(turn, salt, 300)}}}},
                 {"max_tokens", kReplyTokens},
                 {"stream", true}};
    add_fake_knobs(body, s);
    stream_post(port, "/v1/chat/completions", body);
  }
}

// Each turn of one conversation, stateless: the whole history each time.
Turns stateless_turns(int port, bool busy, const Settings& s) {
  Turns turns_seen;
  json history = json::array({{{"role", "system"}, {"content", "You are a helpful assistant."}}});
  for (int turn = 1; turn <= turns(s); ++turn) {
    if (busy && turn > 1) {
      other_clients(port, turn, s);
    }
    history.push_back({{"role", "user"}, {"content", message(turn, 0, 60)}});
    json body = {{"model", "user.sess"},
                 {"messages", history},
                 {"max_tokens", kReplyTokens},
                 {"stream", true}};
    add_fake_knobs(body, s);
    Streamed r = stream_post(port, "/v1/chat/completions", body);
    turns_seen.add(r);
    history.push_back({{"role", "assistant"}, {"content", r.reply}});
  }
  return turns_seen;
}

// The same conversation in a session: one message appended per turn.
Turns session_turns(int port, bool busy, const Settings& s) {
  Turns turns_seen;
  lemon::net::UpstreamClient client("127.0.0.1", port);
  auto post = [&](const std::string& path, const json& body) {
    lemon::net::UpstreamRequest req;
    req.path = path;
    req.content_type = "application/json";
    const std::string text = body.dump();
    req.body = text;
    auto r = client.send(req, {});
    if (!r.ok() || r->status != 200) {
      throw std::runtime_error("POST " + path +
                               " failed: " + (r.ok() ? r->body : r.error().message()));
    }
    return json::parse(r->body);
  };
  json session = post("/api/v1/sessions",
                      {{"model", "user.sess"}, {"system", "You are a helpful assistant."}});
  const std::string base = "/api/v1/sessions/" + session["id"].get<std::string>();
  for (int turn = 1; turn <= turns(s); ++turn) {
    if (busy && turn > 1) {
      other_clients(port, turn, s);
    }
    post(base + "/messages", {{"role", "user"}, {"content", message(turn, 0, 60)}});
    json body = {{"max_tokens", kReplyTokens}, {"stream", true}};
    add_fake_knobs(body, s);
    turns_seen.add(stream_post(port, base + "/generate", body));
  }
  lemon::net::UpstreamRequest del;
  del.method = "DELETE";
  del.path = base;
  (void)client.send(del, {});
  return turns_seen;
}

}  // namespace

void measure_sessions(BenchEnv& env, const Settings& s, Report& report) {
  json data = json::object();
  struct Setting {
    const char* key;
    const char* label;
    bool busy;
    std::vector<std::string> extra_args;
  };
  std::vector<Setting> settings = {{"shared", "shared server", true, {}},
                                   {"quiet", "quiet server", false, {}}};
  if (!s.fake) {
    // A real llama-server keeps evicted prompts in RAM (--cache-ram, 8 GiB by
    // default) and restores them; without that cache, a slot's own cache is
    // all there is, as with older releases or a machine short of memory.
    settings.push_back({"shared_no_cache_ram",
                        "shared, --cache-ram 0",
                        true,
                        {"--llamacpp-args", "--cache-ram 0"}});
  }
  for (const auto& setting : settings) {
    std::vector<std::string> args = {"--parallel", "2", "--log-level", "warning"};
    args.insert(args.end(), setting.extra_args.begin(), setting.extra_args.end());
    // A fresh router (and backend) for each mode, so no cache carries over.
    int port = env.start_router(args);
    Turns stateless = stateless_turns(port, setting.busy, s);
    port = env.start_router(args);
    Turns session = session_turns(port, setting.busy, s);
    const std::string section = std::string("sessions (") + setting.label + ")";
    report.add({section, "TTFT last turn, stateless chat", std::nullopt, stateless.ttft_ms.back(),
                std::nullopt, "ms"});
    report.add({section, "TTFT last turn, session", std::nullopt, session.ttft_ms.back(),
                std::nullopt, "ms"});
    if (stateless.evaluated.back() >= 0 && session.evaluated.back() >= 0) {
      report.add({section, "prompt tokens evaluated last turn, stateless", std::nullopt,
                  static_cast<double>(stateless.evaluated.back()), std::nullopt, "tokens"});
      report.add({section, "prompt tokens evaluated last turn, session", std::nullopt,
                  static_cast<double>(session.evaluated.back()), std::nullopt, "tokens"});
    }
    data[setting.key] = {{"stateless_ttft_ms", stateless.ttft_ms},
                         {"session_ttft_ms", session.ttft_ms},
                         {"stateless_prompt_tokens_evaluated", stateless.evaluated},
                         {"session_prompt_tokens_evaluated", session.evaluated}};
  }
  data["turns"] = turns(s);
  data["prompt_us_per_token"] = s.fake ? json(prompt_us_per_token(s)) : json(nullptr);
  report.data()["sessions"] = data;
  env.stop_router();
}

}  // namespace bench
