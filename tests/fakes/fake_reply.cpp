#include "fake_reply.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

#include "fake_runtime.h"
#include "fake_util.h"

namespace fake {
namespace {

constexpr int kPollMs = 5;

enum class Wait { kDone, kClientGone, kStopping };

// Sleeps `ms` milliseconds (forever when ms < 0) while watching the client.
Wait wait_watching(httplib::DataSink& sink, int ms) {
  const Runtime& rt = runtime();
  int64_t until = mono_ns() + static_cast<int64_t>(ms) * 1000000LL;
  while (ms < 0 || mono_ns() < until) {
    if (rt.stopping) {
      return Wait::kStopping;
    }
    if (!sink.is_writable()) {
      return Wait::kClientGone;
    }
    int64_t left_ms = ms < 0 ? kPollMs : (until - mono_ns()) / 1000000LL + 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(left_ms < kPollMs ? left_ms : kPollMs));
  }
  return rt.stopping ? Wait::kStopping : Wait::kDone;
}

// The tests' gates (GenParams::gate): each POST /fake/release opens every
// gate waiting at that moment.
struct Gates {
  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t generation = 0;  // releases so far
  int held = 0;                  // answers waiting at a gate now
  long reached = 0;              // gates answers have come to, in all
};

Gates& gates() {
  static Gates g;
  return g;
}

std::uint64_t gate_generation() {
  std::lock_guard lock(gates().mu);
  return gates().generation;
}

// Waits until a release after `seen` (gate_generation() taken before the
// test could have seen what it releases), watching the client.
Wait wait_for_release(httplib::DataSink& sink, std::uint64_t seen) {
  Gates& g = gates();
  std::unique_lock lock(g.mu);
  ++g.held;
  ++g.reached;
  Wait outcome = Wait::kDone;
  while (g.generation == seen) {
    if (runtime().stopping) {
      outcome = Wait::kStopping;
      break;
    }
    lock.unlock();
    const bool writable = sink.is_writable();
    lock.lock();
    if (!writable) {
      outcome = Wait::kClientGone;
      break;
    }
    g.cv.wait_for(lock, std::chrono::milliseconds(kPollMs));
  }
  --g.held;
  return outcome;
}

bool write_event(httplib::DataSink& sink, const std::string& event) {
  return !runtime().stopping && sink.write(event.data(), event.size());
}

[[noreturn]] void crash(const char* why) {
  std::printf("fake: crashing (%s)\n", why);
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(134);
}

std::string default_stream_error() {
  return sse_data(json{{"error",
                        {{"code", 500},
                         {"message", "Context size has been exceeded."},
                         {"type", "exceed_context_size_error"}}}});
}

enum class StreamFault { kNone, kError };

// Applies crash_mid_stream_after_chunks / stream_error_after_chunks once
// `sent` token chunks have been written. Returns kError when the error event
// must be sent now.
StreamFault after_chunks(int sent) {
  const Knobs& knobs = runtime().knobs;
  if (knobs.crash_mid_stream_after_chunks == sent) {
    crash("crash_mid_stream_after_chunks");
  }
  return knobs.stream_error_after_chunks == sent ? StreamFault::kError : StreamFault::kNone;
}

// Waits `ms` (forever when < 0) as wait_watching does, writing llama-server's
// SSE ping, a ":" comment, whenever the stream has been silent for
// `ping_s` seconds (none when ping_s <= 0).
Wait wait_pinging(httplib::DataSink& sink, int ms, int ping_s) {
  if (ping_s <= 0) {
    return wait_watching(sink, ms);
  }
  const int every = ping_s * 1000;
  for (int spent = 0; ms < 0 || spent < ms;) {
    const int step = ms < 0 ? every : std::min(every, ms - spent);
    if (Wait w = wait_watching(sink, step); w != Wait::kDone) {
      return w;
    }
    spent += step;
    if (step == every && !write_event(sink, ":\n\n")) {
      return Wait::kClientGone;
    }
  }
  return Wait::kDone;
}

// The response delay, llama-server's prefill: with a progress event, 0 % at
// its start, one every prefill_progress_ms, and 100 % at its end, as
// llama-server reports a prompt batch by batch.
Wait prefill(httplib::DataSink& sink, const GenParams& params, const StreamPlan& plan) {
  if (!plan.progress_event || params.hang) {
    return wait_pinging(sink, params.hang ? -1 : params.response_delay_ms,
                        params.sse_ping_interval_s);
  }
  const int every = runtime().knobs.prefill_progress_ms;
  const long todo = plan.prompt_tokens - plan.cached_tokens;
  if (!write_event(sink, plan.progress_event(plan.cached_tokens))) {
    return Wait::kClientGone;
  }
  for (int spent = 0; spent < params.response_delay_ms;) {
    const int step = every > 0 ? std::min(every, params.response_delay_ms - spent)
                               : params.response_delay_ms - spent;
    if (Wait w = wait_pinging(sink, step, params.sse_ping_interval_s); w != Wait::kDone) {
      return w;
    }
    spent += step;
    if (spent < params.response_delay_ms &&
        !write_event(sink, plan.progress_event(plan.cached_tokens +
                                               todo * spent / params.response_delay_ms))) {
      return Wait::kClientGone;
    }
  }
  return write_event(sink, plan.progress_event(plan.prompt_tokens)) ? Wait::kDone
                                                                    : Wait::kClientGone;
}

// Body of reply_stream's content provider; returns false to abort the connection.
bool run_stream(Job& job, httplib::DataSink& sink, const GenParams& params,
                const StreamPlan& plan) {
  if (prefill(sink, params, plan) != Wait::kDone) {
    return false;
  }
  if (params.gate == "start" && wait_for_release(sink, gate_generation()) != Wait::kDone) {
    return false;
  }
  if (plan.head) {
    for (const std::string& ev : plan.head()) {
      if (!write_event(sink, ev)) {
        return false;
      }
    }
  }
  std::uint64_t token_gate = 0;
  for (int i = 0; i <= plan.tokens; ++i) {
    if (after_chunks(i) == StreamFault::kError) {
      std::printf("fake: sending mid-stream error after %d chunks\n", i);
      if (!write_event(sink, plan.error_event ? plan.error_event() : default_stream_error())) {
        return false;
      }
      job.mark_answered();
      sink.done();
      return true;
    }
    if (i == plan.tokens) {
      break;
    }
    if (i > 0 && params.stream_chunk_delay_ms > 0 &&
        wait_watching(sink, params.stream_chunk_delay_ms) != Wait::kDone) {
      return false;
    }
    if (i > 0 && params.gate == "tokens" && wait_for_release(sink, token_gate) != Wait::kDone) {
      return false;
    }
    if (params.stream_chunk_delay_ms <= 0 && !sink.is_writable()) {
      return false;
    }
    // Taken before the token goes out: the test releases the next one only
    // after it has read this one.
    token_gate = gate_generation();
    if (!write_event(sink, plan.token_event(i, token_piece(i)))) {
      return false;
    }
  }
  if (plan.tail) {
    for (const std::string& ev : plan.tail()) {
      if (!write_event(sink, ev)) {
        return false;
      }
    }
  }
  job.mark_answered();
  if (const int end_delay = runtime().knobs.stream_end_delay_ms;
      end_delay > 0 && wait_watching(sink, end_delay) != Wait::kDone) {
    return false;
  }
  sink.done();
  return true;
}

}  // namespace

Job::Job() {
  runtime().counters.active++;
}

void Job::mark_answered() {
  if (answered_) {
    return;
  }
  answered_ = true;
  // llama-server frees the slot when its task ends, before the answer's
  // last bytes: a request sent as soon as this one's end is read finds it
  // free.
  holds_.clear();
  Counters& c = runtime().counters;
  c.completed++;
  c.active--;
}

Job::~Job() {
  if (answered_) {
    return;
  }
  Counters& c = runtime().counters;
  if (!runtime().stopping) {
    c.cancelled++;
    std::printf("fake: client disconnected\n");
  }
  c.active--;
}

namespace {

// The accepted socket whose peer is the request's client.
int socket_of(const httplib::Request& req) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    const int fd = std::atoi(entry.path().filename().c_str());
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) {
      continue;
    }
    char host[INET6_ADDRSTRLEN] = {};
    int port = 0;
    if (peer.ss_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&peer);
      ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
      port = ntohs(a->sin_port);
    } else if (peer.ss_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&peer);
      ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
      port = ntohs(a->sin6_port);
    }
    if (port == req.remote_port && req.remote_addr == host) {
      return fd;
    }
  }
  return -1;
}

}  // namespace

JobPtr admit(const httplib::Request& req, httplib::Response& res) {
  Runtime& rt = runtime();
  if (is_ready() && rt.counters.resets.load() < rt.knobs.reset_first_requests) {
    const int fd = socket_of(req);
    if (fd >= 0) {
      ++rt.counters.resets;
      // Disconnecting an established TCP socket aborts it with a RST; the
      // server then fails to write and closes its descriptor itself.
      sockaddr unspec{};
      unspec.sa_family = AF_UNSPEC;
      ::connect(fd, &unspec, sizeof unspec);
      std::printf("fake: reset the connection of request %ld\n", rt.counters.resets.load());
      res.status = 500;
      return nullptr;
    }
  }
  return admit(res);
}

JobPtr admit(httplib::Response& res) {
  Runtime& rt = runtime();
  if (!is_ready()) {
    reply_loading(res);
    return nullptr;
  }
  long n = ++rt.counters.requests;
  if (rt.knobs.crash_on_request && *rt.knobs.crash_on_request == n) {
    crash("crash_on_request");
  }
  auto job = std::make_shared<Job>();
  if (rt.knobs.error_status) {
    int status = rt.knobs.error_status->status;
    std::string type = status >= 500 ? "server_error" : "invalid_request_error";
    reply_now(job, res, status, llama_error_json(status, rt.knobs.error_status->message, type));
    return nullptr;
  }
  return job;
}

void reply_now(const JobPtr& job, httplib::Response& res, int status, const std::string& body,
               const char* content_type) {
  res.status = status;
  res.set_content(body, content_type);
  job->mark_answered();
}

void reply_later(const JobPtr& job, httplib::Response& res, const GenParams& params,
                 int extra_delay_ms, std::string body, std::string content_type) {
  int delay = params.hang ? -1 : params.response_delay_ms + extra_delay_ms;
  if (delay == 0 && params.gate != "start") {
    // As llama-server answers a finished request: the whole body with a
    // Content-Length, head and body together.
    reply_now(job, res, 200, body, content_type.c_str());
    return;
  }
  res.set_chunked_content_provider(
      content_type,
      [job, delay, gate = params.gate, body = std::move(body)](size_t, httplib::DataSink& sink) {
        if (wait_watching(sink, delay) != Wait::kDone ||
            (gate == "start" && wait_for_release(sink, gate_generation()) != Wait::kDone) ||
            !write_event(sink, body)) {
          return false;
        }
        job->mark_answered();
        sink.done();
        return true;
      });
}

void reply_stream(const JobPtr& job, httplib::Response& res, const GenParams& params,
                  StreamPlan plan) {
  // head_delay_ms: the handler returns (and the head goes out) only then.
  for (int64_t until = mono_ns() + int64_t{runtime().knobs.head_delay_ms} * 1000000;
       mono_ns() < until && !runtime().stopping;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [job, params, plan = std::move(plan)](size_t, httplib::DataSink& sink) {
        try {
          return run_stream(*job, sink, params, plan);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "fake: stream error: %s\n", e.what());
          return false;
        }
      });
}

bool wait_at_gate() {
  Gates& g = gates();
  std::unique_lock lock(g.mu);
  const std::uint64_t seen = g.generation;
  ++g.held;
  ++g.reached;
  while (g.generation == seen && !runtime().stopping) {
    g.cv.wait_for(lock, std::chrono::milliseconds(kPollMs));
  }
  --g.held;
  return g.generation != seen;
}

void release_gates() {
  Gates& g = gates();
  std::lock_guard lock(g.mu);
  ++g.generation;
  g.cv.notify_all();
}

int gates_held() {
  std::lock_guard lock(gates().mu);
  return gates().held;
}

long gates_reached() {
  std::lock_guard lock(gates().mu);
  return gates().reached;
}

}  // namespace fake
