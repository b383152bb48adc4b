// WaitQuota: how many requests may wait (for a load or a free slot) for one
// model and in all (--max-queued-requests, --max-queued-requests-total).
// A request takes a Place the first time it must wait and keeps it until
// acquire() returns; beyond either bound it gets kQueueFull. The counts are
// published in the RouterView (waiting, waiting_total).
//
// Thread-safety: every method from any thread. Its lock sits below the
// server table's and the load queue's (a place is taken under either) and
// above only the ViewBoard's.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "lemon/core/error.h"
#include "lemon/core/mutex.h"
#include "view_board.h"

namespace lemon {

class WaitQuota {
 public:
  WaitQuota(int max_per_model, int max_total, ViewBoard& board);

  // One request's place while it waits: empty until join(), given back by
  // the destructor.
  class Place {
   public:
    explicit Place(WaitQuota& quota) : quota_(quota) {}
    ~Place();
    Place(const Place&) = delete;
    Place& operator=(const Place&) = delete;

    // Counts the request against `model` (once: a place already taken
    // stays where it is). kQueueFull when a bound is reached.
    std::optional<Error> join(std::string_view model);

   private:
    WaitQuota& quota_;
    std::optional<std::string> model_;
  };

 private:
  std::optional<Error> enter(std::string_view model) LEMON_EXCLUDES(mu_);
  void leave(const std::string& model) LEMON_EXCLUDES(mu_);
  void publish() LEMON_REQUIRES(mu_);

  const int max_per_model_;
  const int max_total_;
  ViewBoard& board_;
  Mutex mu_;
  int total_ LEMON_GUARDED_BY(mu_) = 0;
  std::map<std::string, int, std::less<>> by_model_ LEMON_GUARDED_BY(mu_);
};

}  // namespace lemon
