// TakenFirstPorts: a PortAllocator whose first acquire() hands out `taken`, a
// port another program already holds (as when someone takes it between the
// allocator's check and the child's bind); later calls, and release() of any
// other port, behave as the real allocator's.
#pragma once

#include <atomic>

#include "lemon/process/port_allocator.h"

namespace lemon::testing {

class TakenFirstPorts final : public PortAllocator {
 public:
  TakenFirstPorts(int first_port, int taken) : PortAllocator(first_port), taken_(taken) {}
  Result<int> acquire() override;
  void release(int port) override;

 private:
  const int taken_;
  std::atomic<bool> handed_taken_{false};
};

}  // namespace lemon::testing
