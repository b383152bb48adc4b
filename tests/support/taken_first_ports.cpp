#include "support/taken_first_ports.h"

namespace lemon::testing {

Result<int> TakenFirstPorts::acquire() {
  if (!handed_taken_.exchange(true)) {
    return taken_;
  }
  return PortAllocator::acquire();
}

void TakenFirstPorts::release(int port) {
  if (port != taken_) {
    PortAllocator::release(port);
  }
}

}  // namespace lemon::testing
