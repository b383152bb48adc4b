#include "fake_knobs.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "fake_runtime.h"
#include "fake_util.h"

namespace fake {
namespace {

[[noreturn]] void bad_config(const std::string& what) {
  std::fprintf(stderr, "fake: invalid knob configuration: %s\n", what.c_str());
  std::exit(1);
}

json parse_object(const std::string& text, const std::string& origin) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    bad_config(origin + " is not a JSON object");
  }
  return j;
}

int get_int(const json& j, const char* key) {
  const json& v = j.at(key);
  if (!v.is_number_integer()) {
    bad_config(std::string(key) + " must be an integer");
  }
  return v.get<int>();
}

bool get_bool(const json& j, const char* key) {
  const json& v = j.at(key);
  if (!v.is_boolean()) {
    bad_config(std::string(key) + " must be a boolean");
  }
  return v.get<bool>();
}

std::optional<int> opt_int(const json& j, const char* key) {
  if (!j.contains(key)) {
    return std::nullopt;
  }
  return get_int(j, key);
}

std::string message_of(const json& obj, const char* key) {
  if (!obj.contains("message")) {
    return "";
  }
  if (!obj["message"].is_string()) {
    bad_config(std::string(key) + ".message must be a string");
  }
  return obj["message"].get<std::string>();
}

void warn_unknown_keys(const json& j) {
  static const std::set<std::string> kKnown = {"startup_delay_ms",
                                               "exit_at_start",
                                               "ignore_model_check",
                                               "hang_at_start",
                                               "crash_on_request",
                                               "crash_mid_stream_after_chunks",
                                               "hang_requests",
                                               "response_delay_ms",
                                               "stream_chunk_delay_ms",
                                               "stream_end_delay_ms",
                                               "tokens",
                                               "ignore_sigterm",
                                               "error_status",
                                               "stream_error_after_chunks",
                                               "prompt_us_per_token",
                                               "oom_while_siblings_above",
                                               "template_rules",
                                               "reset_first_requests",
                                               "prefill_progress_ms",
                                               "ignore_return_progress",
                                               "slots_report_idle",
                                               "slot_save_fails",
                                               "slot_save_truncates",
                                               "slot_save_delay_ms",
                                               "slot_restore_fails",
                                               "slot_restore_gate",
                                               "head_delay_ms",
                                               "gate",
                                               "draft_acceptance",
                                               "unknown_flags",
                                               "load_gate",
                                               "child_mode",
                                               "load_progress_steps",
                                               "load_stalls_after_steps",
                                               "reply_text"};
  for (const auto& item : j.items()) {
    if (kKnown.count(item.key()) == 0) {
      std::fprintf(stderr, "fake: warning: unknown knob '%s' ignored\n", item.key().c_str());
    }
  }
}

Knobs from_json(const json& j) {
  Knobs k;
  if (j.contains("startup_delay_ms")) {
    k.startup_delay_ms = get_int(j, "startup_delay_ms");
  }
  if (j.contains("exit_at_start")) {
    const json& e = j["exit_at_start"];
    if (!e.is_object()) {
      bad_config("exit_at_start must be an object {\"code\",\"message\"}");
    }
    k.exit_at_start =
        ExitSpec{e.contains("code") ? get_int(e, "code") : 1, message_of(e, "exit_at_start")};
  }
  if (j.contains("error_status")) {
    const json& e = j["error_status"];
    if (!e.is_object() || !e.contains("status")) {
      bad_config("error_status must be an object {\"status\",\"message\"}");
    }
    k.error_status = ErrorSpec{get_int(e, "status"), message_of(e, "error_status")};
  }
  if (j.contains("ignore_model_check")) {
    k.ignore_model_check = get_bool(j, "ignore_model_check");
  }
  if (j.contains("hang_at_start")) {
    k.hang_at_start = get_bool(j, "hang_at_start");
  }
  if (j.contains("child_mode")) {
    k.child_mode = get_bool(j, "child_mode");
  }
  if (j.contains("load_gate")) {
    k.load_gate = get_bool(j, "load_gate");
  }
  if (j.contains("load_progress_steps")) {
    k.load_progress_steps = get_int(j, "load_progress_steps");
  }
  if (j.contains("load_stalls_after_steps")) {
    k.load_stalls_after_steps = get_int(j, "load_stalls_after_steps");
  }
  if (j.contains("hang_requests")) {
    k.hang_requests = get_bool(j, "hang_requests");
  }
  if (j.contains("ignore_sigterm")) {
    k.ignore_sigterm = get_bool(j, "ignore_sigterm");
  }
  if (j.contains("response_delay_ms")) {
    k.response_delay_ms = get_int(j, "response_delay_ms");
  }
  if (j.contains("prefill_progress_ms")) {
    k.prefill_progress_ms = get_int(j, "prefill_progress_ms");
  }
  if (j.contains("ignore_return_progress")) {
    k.ignore_return_progress = get_bool(j, "ignore_return_progress");
  }
  if (j.contains("slots_report_idle")) {
    k.slots_report_idle = get_bool(j, "slots_report_idle");
  }
  if (j.contains("slot_save_fails")) {
    k.slot_save_fails = get_bool(j, "slot_save_fails");
  }
  if (j.contains("slot_save_truncates")) {
    k.slot_save_truncates = get_bool(j, "slot_save_truncates");
  }
  if (j.contains("slot_save_delay_ms")) {
    k.slot_save_delay_ms = get_int(j, "slot_save_delay_ms");
  }
  if (j.contains("slot_restore_fails")) {
    k.slot_restore_fails = get_bool(j, "slot_restore_fails");
  }
  if (j.contains("slot_restore_gate")) {
    k.slot_restore_gate = get_bool(j, "slot_restore_gate");
  }
  if (j.contains("head_delay_ms")) {
    k.head_delay_ms = get_int(j, "head_delay_ms");
  }
  if (j.contains("gate")) {
    if (!j["gate"].is_string()) {
      bad_config("gate must be a string");
    }
    k.gate = j["gate"].get<std::string>();
  }
  if (j.contains("reply_text")) {
    if (!j["reply_text"].is_string()) {
      bad_config("reply_text must be a string");
    }
    k.reply_text = j["reply_text"].get<std::string>();
  }
  if (j.contains("stream_chunk_delay_ms")) {
    k.stream_chunk_delay_ms = get_int(j, "stream_chunk_delay_ms");
  }
  if (j.contains("stream_end_delay_ms")) {
    k.stream_end_delay_ms = get_int(j, "stream_end_delay_ms");
  }
  if (j.contains("prompt_us_per_token")) {
    k.prompt_us_per_token = get_int(j, "prompt_us_per_token");
  }
  if (j.contains("reset_first_requests")) {
    k.reset_first_requests = get_int(j, "reset_first_requests");
  }
  if (j.contains("template_rules")) {
    const json& rules = j["template_rules"];
    if (!rules.is_array()) {
      bad_config("template_rules must be an array of strings");
    }
    for (const auto& r : rules) {
      if (!r.is_string() ||
          (r != "reasoning_with_tool_calls" && r != "system_first" && r != "alternate_roles")) {
        bad_config("template_rules: unknown rule " + r.dump());
      }
      k.template_rules.push_back(r.get<std::string>());
    }
  }
  if (j.contains("draft_acceptance")) {
    if (!j["draft_acceptance"].is_number() || j["draft_acceptance"].get<double>() < 0 ||
        j["draft_acceptance"].get<double>() > 1) {
      bad_config("draft_acceptance must be a number from 0 to 1");
    }
    k.draft_acceptance = j["draft_acceptance"].get<double>();
  }
  if (j.contains("unknown_flags")) {
    const json& flags = j["unknown_flags"];
    if (!flags.is_array()) {
      bad_config("unknown_flags must be an array of strings");
    }
    for (const auto& f : flags) {
      if (!f.is_string()) {
        bad_config("unknown_flags must be an array of strings");
      }
      k.unknown_flags.push_back(f.get<std::string>());
    }
  }
  k.oom_while_siblings_above = opt_int(j, "oom_while_siblings_above");
  k.crash_on_request = opt_int(j, "crash_on_request");
  k.crash_mid_stream_after_chunks = opt_int(j, "crash_mid_stream_after_chunks");
  k.tokens = opt_int(j, "tokens");
  k.stream_error_after_chunks = opt_int(j, "stream_error_after_chunks");
  return k;
}

}  // namespace

Knobs load_knobs(const std::string& sidecar_path) {
  json merged = json::object();
  std::string env = env_or_empty("LEMON_FAKE_CONFIG");
  if (!env.empty()) {
    merged.update(parse_object(env, "LEMON_FAKE_CONFIG"));
  }
  if (!sidecar_path.empty() && is_regular_file(sidecar_path)) {
    std::ifstream in(sidecar_path);
    std::stringstream text;
    text << in.rdbuf();
    merged.update(parse_object(text.str(), sidecar_path));
    std::printf("fake: loaded knobs from %s\n", sidecar_path.c_str());
  }
  warn_unknown_keys(merged);
  return from_json(merged);
}

GenParams request_params(const Knobs& knobs, const json& body) {
  GenParams p;
  p.response_delay_ms = knobs.response_delay_ms;
  p.stream_chunk_delay_ms = knobs.stream_chunk_delay_ms;
  p.tokens = knobs.tokens;
  p.hang = knobs.hang_requests;
  p.prompt_us_per_token = knobs.prompt_us_per_token;
  p.gate = knobs.gate;
  p.sse_ping_interval_s = runtime().sse_ping_interval_s;
  if (body.is_object() && body.contains("sse_ping_interval") &&
      body["sse_ping_interval"].is_number_integer()) {
    p.sse_ping_interval_s = body["sse_ping_interval"].get<int>();
  }
  if (!body.is_object() || !body.contains("lemon_fake") || !body["lemon_fake"].is_object()) {
    return p;
  }
  const json& o = body["lemon_fake"];
  auto int_field = [&o](const char* key) -> std::optional<int> {
    if (o.contains(key) && o[key].is_number_integer()) {
      return o[key].get<int>();
    }
    return std::nullopt;
  };
  if (auto v = int_field("response_delay_ms")) {
    p.response_delay_ms = *v;
  }
  if (auto v = int_field("stream_chunk_delay_ms")) {
    p.stream_chunk_delay_ms = *v;
  }
  if (auto v = int_field("tokens")) {
    p.tokens = *v;
  }
  if (auto v = int_field("prompt_us_per_token")) {
    p.prompt_us_per_token = *v;
  }
  if (o.contains("gate") && o["gate"].is_string()) {
    p.gate = o["gate"].get<std::string>();
  }
  return p;
}

}  // namespace fake
