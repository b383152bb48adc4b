#include "lemon/router/lease.h"

#include "server_table.h"

namespace lemon {

Lease& Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    release();
    table_ = std::exchange(other.table_, nullptr);
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
  if (slot_ && table_ != nullptr) {
    table_->release(*slot_, backend_slot_);
  }
  table_ = nullptr;
  slot_.reset();
  backend_slot_ = -1;
}

}  // namespace lemon
