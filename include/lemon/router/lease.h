// Lease: the right to send requests to one loaded server. While any Lease on
// a server exists, the router never stops it (busy protection); the count of
// live Leases is the server's exact in-flight count. Destroying (or
// release()-ing) a Lease decrements it and touches the LRU clock.
//
// Move-only. A Lease must not outlive the Router that granted it.
// Thread-safety: one Lease is used by one thread; different Leases freely.
#pragma once

#include <memory>

#include <string>
#include <utility>

#include "lemon/backends/wrapped_server.h"

namespace lemon {

class ServerTable;
struct ServerSlot;

class Lease {
 public:
  Lease() = default;
  ~Lease() { release(); }
  Lease(Lease&& other) noexcept
      : table_(std::exchange(other.table_, nullptr)),
        slot_(std::move(other.slot_)),
        backend_slot_(std::exchange(other.backend_slot_, -1)) {}
  Lease& operator=(Lease&& other) noexcept;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  explicit operator bool() const { return slot_ != nullptr; }
  WrappedServer& server() const;
  const std::string& model_name() const;
  // The llama.cpp slot this lease's request must use (`id_slot`), or -1 to
  // let the backend choose: set for a session's turn, and for other requests
  // while some of the server's slots are pinned to sessions.
  int backend_slot() const { return backend_slot_; }

  // Ends the lease early. Idempotent.
  void release();

 private:
  friend class ServerTable;
  Lease(ServerTable* table, std::shared_ptr<ServerSlot> slot, int backend_slot = -1)
      : table_(table), slot_(std::move(slot)), backend_slot_(backend_slot) {}

  ServerTable* table_ = nullptr;
  std::shared_ptr<ServerSlot> slot_;
  int backend_slot_ = -1;
};

}  // namespace lemon
