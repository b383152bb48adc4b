// ViewBoard: where the RouterView readers see (Router::view(): /metrics,
// the dashboard, the context monitor) is put together. Each part of the
// router publishes its own share while it holds its own lock, so shares
// arrive in the order their owner changed them: the server table its
// servers, devices and limits, the wait quota the waiting requests, the load
// queue the loads under way. Every publication makes a new immutable view.
//
// Thread-safety: every method from any thread. Its lock is a leaf and
// guards only the parts and the pointer: a reader copies the pointer and
// never waits for a request, a load or a drain.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lemon/core/mutex.h"
#include "lemon/router/router_view.h"

namespace lemon {

class ViewBoard {
 public:
  ViewBoard();

  std::shared_ptr<const RouterView> view() const LEMON_EXCLUDES(mu_);

  void publish_servers(std::vector<ServerView> servers, std::vector<DeviceMemoryInfo> devices,
                       const SlotLimits& limits) LEMON_EXCLUDES(mu_);
  void publish_waiting(std::map<std::string, int, std::less<>> waiting, int total)
      LEMON_EXCLUDES(mu_);
  void publish_loading(std::vector<std::string> loading) LEMON_EXCLUDES(mu_);

 private:
  // A new view of the parts, stamped now.
  void compose() LEMON_REQUIRES(mu_);

  mutable Mutex mu_;
  RouterView parts_ LEMON_GUARDED_BY(mu_);
  std::shared_ptr<const RouterView> view_ LEMON_GUARDED_BY(mu_);
};

}  // namespace lemon
