#include "lemon/router/lease.h"

#include "router_core.h"

namespace lemon {

Lease& Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    release();
    router_ = std::exchange(other.router_, nullptr);
    slot_ = std::move(other.slot_);
    backend_slot_ = std::exchange(other.backend_slot_, -1);
  }
  return *this;
}

WrappedServer& Lease::server() const {
  return *slot_->server;
}

const std::string& Lease::model_name() const {
  return slot_->server->model_name();
}

void Lease::release() {
  if (slot_ && router_ != nullptr) {
    router_->release(*slot_, backend_slot_);
  }
  router_ = nullptr;
  slot_.reset();
  backend_slot_ = -1;
}

}  // namespace lemon
