#include "lemon/app/graceful_drain.h"

#include <csignal>
#include <ctime>

#include "lemon/core/log.h"

namespace lemon {

ShutdownSignals::ShutdownSignals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

GracefulDrain::GracefulDrain(const ShutdownSignals& signals, DrainTargets targets,
                             std::chrono::milliseconds timeout, std::function<void()> on_reload)
    : signals_(signals.set()),
      targets_(targets),
      timeout_(timeout),
      on_reload_(std::move(on_reload)) {
  thread_ = std::thread([this] { drain(); });
}

GracefulDrain::~GracefulDrain() {
  if (thread_.joinable()) {
    thread_.detach();
  }
}

void GracefulDrain::drain() {
  auto log = logger("app");
  int sig = 0;
  for (;;) {
    sigwait(&signals_, &sig);
    if (sig != SIGHUP) {
      break;
    }
    log->info("received SIGHUP: reading the configuration again");
    if (on_reload_) {
      on_reload_();
    }
  }
  signalled_ = true;
  http::ApiServer& api = targets_.api;
  log->info(
      "received signal {}; draining {} in-flight request(s) for up to {} ms (a second signal "
      "skips the drain)",
      sig, api.in_flight(), timeout_.count());
  targets_.store.shutdown();
  targets_.installer.shutdown();
  api.stop();
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  bool skipped = false;
  while (api.in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
    timespec poll_interval{0, 100'000'000};
    if (const int second = sigtimedwait(&signals_, nullptr, &poll_interval);
        second > 0 && second != SIGHUP) {
      skipped = true;
      break;
    }
  }
  if (const int left = api.in_flight(); left > 0) {
    api.expire_drain();
    log->warn("{}: cutting {} request(s) still in flight",
              skipped ? "second signal, drain skipped" : "--drain-timeout passed", left);
  } else {
    log->info("drained: no request in flight");
  }
  targets_.context.stop();
  targets_.router.shutdown();
}

void GracefulDrain::finish() {
  if (signalled_) {
    thread_.join();
  } else {
    thread_.detach();
  }
  stop_everything();
}

void GracefulDrain::stop_everything() {
  targets_.store.shutdown();
  targets_.installer.shutdown();
  targets_.context.stop();
  targets_.router.shutdown();
}

}  // namespace lemon
