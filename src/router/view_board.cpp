#include "view_board.h"

#include "lemon/core/clock.h"

namespace lemon {

ViewBoard::ViewBoard() {
  MutexLock lock(mu_);
  compose();
}

std::shared_ptr<const RouterView> ViewBoard::view() const {
  MutexLock lock(mu_);
  return view_;
}

void ViewBoard::publish_servers(std::vector<ServerView> servers,
                                std::vector<DeviceMemoryInfo> devices, const SlotLimits& limits) {
  MutexLock lock(mu_);
  parts_.servers = std::move(servers);
  parts_.devices = std::move(devices);
  parts_.limits = limits;
  compose();
}

void ViewBoard::publish_waiting(std::map<std::string, int, std::less<>> waiting, int total) {
  MutexLock lock(mu_);
  parts_.waiting = std::move(waiting);
  parts_.waiting_total = total;
  compose();
}

void ViewBoard::publish_loading(std::vector<std::string> loading) {
  MutexLock lock(mu_);
  parts_.loading = std::move(loading);
  compose();
}

void ViewBoard::compose() {
  parts_.published_ms = unix_ms_now();
  view_ = std::make_shared<const RouterView>(parts_);
}

}  // namespace lemon
