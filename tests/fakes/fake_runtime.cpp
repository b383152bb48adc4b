#include "fake_runtime.h"

#include "fake_reply.h"
#include "fake_slots.h"

#include "fake_task_queue.h"

#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "fake_util.h"

extern char** environ;

namespace fake {
namespace {

// The listening socket, captured when httplib creates it.
int g_listen_fd = -1;

std::atomic<httplib::Server*> g_server{nullptr};

// The variables that choose a GPU for a child (the router's `gpu` option).
bool is_device_selector(const std::string& entry) {
  for (const char* var : {"CUDA_VISIBLE_DEVICES=", "HIP_VISIBLE_DEVICES=", "ROCR_VISIBLE_DEVICES=",
                          "GGML_VK_VISIBLE_DEVICES="}) {
    if (entry.rfind(var, 0) == 0) {
      return true;
    }
  }
  return false;
}

json env_snapshot() {
  json env = json::object();
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string entry(*e);
    if (entry.rfind("LEMON_FAKE_", 0) != 0 && !is_device_selector(entry)) {
      continue;
    }
    size_t eq = entry.find('=');
    if (eq != std::string::npos) {
      env[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
  }
  return env;
}

std::mutex g_last_request_mu;
json g_last_request;  // guarded by g_last_request_mu

void state_handler(const httplib::Request&, httplib::Response& res) {
  Runtime& rt = runtime();
  json state = {{"program", rt.program},
                {"pid", static_cast<long>(getpid())},
                {"argv", rt.argv},
                {"model", rt.model},
                {"host", rt.host},
                {"port", rt.port},
                {"requests", rt.counters.requests.load()},
                {"completed", rt.counters.completed.load()},
                {"active", rt.counters.active.load()},
                {"cancelled", rt.counters.cancelled.load()},
                {"resets", rt.counters.resets.load()},
                {"template_rejections", rt.counters.template_rejections.load()},
                {"template_applications", rt.counters.template_applications.load()},
                {"tokenizations", rt.counters.tokenizations.load()},
                {"held", gates_held()},
                {"gates_reached", gates_reached()},
                {"ready", is_ready()},
                {"ready_after_ms", ready_after_ms()},
                {"env", env_snapshot()}};
  {
    std::lock_guard lock(g_last_request_mu);
    state["last_request"] = g_last_request;
  }
  state.update(slot_state());
  res.set_content(dump(state), "application/json");
}

}  // namespace

void remember_request(const json& body) {
  std::lock_guard lock(g_last_request_mu);
  g_last_request = body;
}

namespace {

// Waits for SIGTERM/SIGINT (blocked in every other thread), then stops the
// server and exits 0 shortly after, without waiting for idle keep-alive
// connections or for streams (which observe `stopping`).
// The shutdown after the first signal: stop serving, let open streams
// notice, exit 0.
void shut_down() {
  Runtime& rt = runtime();
  if (httplib::Server* svr = g_server.load()) {
    svr->stop();
  }
  for (int i = 0; i < 100 && rt.counters.active.load() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (rt.before_exit) {
    rt.before_exit();
  }
  std::printf("main: exiting\n");
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(0);
}

// As llama-server: the first SIGTERM or SIGINT shuts down cleanly (exit 0);
// a second one while it does quits at once with status 1. Every signal is
// logged, so a test can count them.
void signal_thread(sigset_t set) {
  for (int received = 0;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0) {
      continue;
    }
    ++received;
    std::printf("main: received signal %d (%s)%s\n", sig, strsignal(sig),
                received == 1 ? ", shutting down" : "");
    if (received > 1) {
      std::printf("Received second interrupt, terminating immediately.\n");
      std::fflush(stdout);
      _exit(1);
    }
    runtime().stopping = true;
    std::thread(shut_down).detach();
  }
}

}  // namespace

void request_shutdown() {
  runtime().stopping = true;
  std::thread(shut_down).detach();
}

namespace {

void install_signal_handling(bool ignore_sigterm, bool sigterm_kills) {
  std::signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  if (ignore_sigterm) {
    std::signal(SIGTERM, SIG_IGN);
  } else if (!sigterm_kills) {
    sigaddset(&set, SIGTERM);
  }
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread(signal_thread, set).detach();
}

void configure(httplib::Server& svr) {
  svr.set_tcp_nodelay(true);
  // As the real servers do (their cpp-httplib's default socket options):
  // SO_REUSEADDR and SO_REUSEPORT, so a fake can listen on a port another
  // program that also set SO_REUSEPORT already listens on, and the kernel
  // then splits connections between the two. A port held without
  // SO_REUSEPORT still makes the bind fail.
  svr.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    setsockopt(sock, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof(yes));
    g_listen_fd = sock;
  });
  svr.set_keep_alive_max_count(100000);
  svr.set_keep_alive_timeout(30);
  svr.new_task_queue = [] { return new GrowingTaskQueue(320); };
  svr.set_logger([](const httplib::Request& req, const httplib::Response& res) {
    std::printf("srv  log_server_r: request: %s %s %s %d\n", req.method.c_str(), req.path.c_str(),
                req.remote_addr.c_str(), res.status);
  });
  svr.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty() && res.status == 404) {
      res.set_content(llama_error_json(404, "File Not Found", "not_found_error"),
                      "application/json");
    }
  });
  svr.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        std::fprintf(stderr, "fake: handler exception: %s\n", what.c_str());
        res.status = 500;
        res.set_content(llama_error_json(500, what, "server_error"), "application/json");
      });
  svr.Get("/fake/state", state_handler);
  svr.Post("/fake/release", [](const httplib::Request&, httplib::Response& res) {
    release_gates();
    res.set_content("{}", "application/json");
  });
}

// Ends the simulated model load after startup_delay_ms (never with hang_at_start).
void start_loading_timer(int64_t listen_ns) {
  Runtime& rt = runtime();
  if (rt.knobs.hang_at_start) {
    std::printf("main: loading model (hang_at_start: will never finish)\n");
    return;
  }
  int64_t ready_at = listen_ns + static_cast<int64_t>(rt.knobs.startup_delay_ms) * 1000000LL;
  if (ready_at == 0) {
    ready_at = 1;
  }
  // The load's first report comes before /health can answer 200, as
  // llama-server sends text_model 0.0 when its load begins.
  if (rt.on_load_progress) {
    rt.on_load_progress(0.0);
  }
  if (!rt.knobs.load_gate && rt.knobs.load_stalls_after_steps < 0) {
    rt.ready_at_ns = ready_at;
  }
  std::thread([ready_at, listen_ns] {
    Runtime& r = runtime();
    auto progress = [&r](double value) {
      if (r.on_load_progress) {
        r.on_load_progress(value);
      }
    };
    const int steps = std::max(1, r.knobs.load_progress_steps);
    if (r.knobs.load_gate) {
      wait_at_gate();
    }
    const int stall = r.knobs.load_stalls_after_steps;
    if (stall == 0) {
      return;  // stuck after its first report: silent from now on
    }
    for (int i = 1; i < steps; ++i) {
      const int64_t at = listen_ns + (ready_at - listen_ns) * i / steps;
      if (at > mono_ns()) {
        std::this_thread::sleep_for(std::chrono::nanoseconds(at - mono_ns()));
      }
      progress(static_cast<double>(i) / steps);
      if (i == stall) {
        return;  // stuck: no more reports, never ready
      }
    }
    int64_t wait_ns = ready_at - mono_ns();
    if (wait_ns > 0) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(wait_ns));
    }
    progress(1.0);
    if (r.knobs.load_gate) {
      r.ready_at_ns = mono_ns();
    }
    std::printf("main: model loaded\n");
    if (r.on_loaded) {
      r.on_loaded();
    }
  }).detach();
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t pos = text.find(from); pos != std::string::npos;
       pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
}

}  // namespace

Runtime& runtime() {
  static Runtime rt;
  return rt;
}

void init_runtime(const char* program, int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Runtime& rt = runtime();
  rt.program = program;
  rt.start_ns = mono_ns();
  rt.argv.assign(argv, argv + argc);
}

void apply_exit_at_start() {
  const Knobs& k = runtime().knobs;
  if (!k.exit_at_start) {
    return;
  }
  std::fprintf(stderr, "%s\n", k.exit_at_start->message.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(k.exit_at_start->code);
}

namespace {

// Other live processes running this program whose parent is ours (the
// router's other llama-servers).
int running_siblings() {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    return 0;
  }
  const std::string exe(self, static_cast<std::size_t>(n));
  const pid_t me = getpid();
  const pid_t parent = getppid();
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos ||
        std::stol(name) == me) {
      continue;
    }
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close == std::string::npos) {
      continue;
    }
    std::istringstream rest(text.substr(close + 1));
    char state = 0;
    long ppid = 0;
    rest >> state >> ppid;
    if (state == 'Z' || ppid != parent) {
      continue;
    }
    char other[4096];
    const ssize_t m = ::readlink((entry.path() / "exe").c_str(), other, sizeof other - 1);
    if (m > 0 && std::string(other, static_cast<std::size_t>(m)) == exe) {
      ++count;
    }
  }
  return count;
}

}  // namespace

void apply_oom_at_start(const std::string& model) {
  const Knobs& k = runtime().knobs;
  if (!k.oom_while_siblings_above || running_siblings() <= *k.oom_while_siblings_above) {
    return;
  }
  // What llama-server prints when the CUDA back end cannot hold the weights.
  std::fprintf(stderr,
               "llama_model_load: loading model tensors, this can take a while... (mmap = true)\n"
               "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4096.00 MiB on device 0: "
               "cudaMalloc failed: out of memory\n"
               "alloc_tensor_range: failed to allocate CUDA0 buffer of size 4294967296\n"
               "llama_model_load: error loading model: unable to allocate CUDA0 buffer\n"
               "llama_model_load_from_file_impl: failed to load model\n"
               "common_init_from_params: failed to load model '%s'\n"
               "srv    load_model: failed to load model, '%s'\n"
               "main: exiting due to model loading failure\n",
               model.c_str(), model.c_str());
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(1);
}

bool is_ready() {
  int64_t at = runtime().ready_at_ns.load();
  return at != 0 && mono_ns() >= at;
}

long ready_after_ms() {
  if (!is_ready()) {
    return -1;
  }
  const Runtime& rt = runtime();
  return static_cast<long>((rt.ready_at_ns.load() - rt.start_ns) / 1000000LL);
}

std::string llama_error_json(int code, const std::string& message, const std::string& type) {
  return dump(json{{"error", {{"code", code}, {"message", message}, {"type", type}}}});
}

void reply_loading(httplib::Response& res) {
  res.status = 503;
  res.set_content(llama_error_json(503, "Loading model", "unavailable_error"), "application/json");
}

void health_handler(const httplib::Request&, httplib::Response& res) {
  if (!is_ready()) {
    reply_loading(res);
    return;
  }
  res.set_content(R"({"status":"ok"})", "application/json");
}

void get_routes(httplib::Server& svr, const std::vector<std::string>& paths,
                const httplib::Server::Handler& handler) {
  for (const std::string& p : paths) {
    svr.Get(p, handler);
  }
}

void post_routes(httplib::Server& svr, const std::vector<std::string>& paths,
                 const httplib::Server::Handler& handler) {
  for (const std::string& p : paths) {
    svr.Post(p, handler);
  }
}

void serve(httplib::Server& svr, const std::vector<std::string>& banner) {
  Runtime& rt = runtime();
  install_signal_handling(rt.knobs.ignore_sigterm, rt.sigterm_kills);
  configure(svr);
  bool bound = false;
  if (rt.port == 0) {
    int port = svr.bind_to_any_port(rt.host);
    bound = port > 0;
    rt.port = bound ? port : 0;
  } else {
    bound = svr.bind_to_port(rt.host, rt.port);
  }
  if (!bound) {
    std::fprintf(stderr, "couldn't bind HTTP server socket, hostname: %s, port: %d\n",
                 rt.host.c_str(), rt.port);
    std::fflush(stdout);
    _exit(1);
  }
  g_server = &svr;
  // Debian's compiled httplib listens with a backlog of 5; a burst of
  // connections (benchmarks, 256 streams) would then wait for SYN
  // retransmits. Listening again on the same socket raises the backlog.
  if (g_listen_fd >= 0) {
    ::listen(g_listen_fd, SOMAXCONN);
  }
  std::printf("main: HTTP server is listening, hostname: %s, port: %d, http threads: 320\n",
              rt.host.c_str(), rt.port);
  for (std::string line : banner) {
    replace_all(line, "{host}", rt.host);
    replace_all(line, "{port}", std::to_string(rt.port));
    std::printf("%s\n", line.c_str());
  }
  start_loading_timer(mono_ns());
  std::printf("main: server is listening on http://%s:%d - starting the main loop\n",
              rt.host.c_str(), rt.port);
  svr.listen_after_bind();
  std::printf("main: server stopped\n");
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(0);
}

}  // namespace fake
