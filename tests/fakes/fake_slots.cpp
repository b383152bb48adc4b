#include "fake_slots.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "fake_runtime.h"
#include "fake_util.h"

namespace fake {
namespace {

struct SlotTable {
  std::mutex mu;
  std::condition_variable cv;
  SlotConfig config;
  int busy = 0;
  int peak = 0;
  long waited = 0;
  long reserved_tokens = 0;  // unified cache: tokens held by running requests
};

SlotTable& table() {
  static SlotTable t;
  return t;
}

// Frees one slot (and its unified-cache tokens) when the job ends.
class SlotHold {
 public:
  explicit SlotHold(long tokens) : tokens_(tokens) {}
  ~SlotHold() {
    SlotTable& t = table();
    std::lock_guard lock(t.mu);
    --t.busy;
    t.reserved_tokens -= tokens_;
    t.cv.notify_all();
  }
  SlotHold(const SlotHold&) = delete;
  SlotHold& operator=(const SlotHold&) = delete;

 private:
  long tokens_;
};

}  // namespace

void configure_slots(const SlotConfig& config) {
  std::lock_guard lock(table().mu);
  table().config = config;
}

std::optional<SlotRefusal> take_slot(const JobPtr& job, int prompt_tokens, int gen_tokens) {
  SlotTable& t = table();
  std::unique_lock lock(t.mu);
  const SlotConfig c = t.config;
  if (c.slots <= 0) {
    return std::nullopt;
  }
  const int per_slot = c.unified ? c.n_ctx : c.n_ctx / c.slots;
  if (prompt_tokens > per_slot) {
    json e = {{"error",
               {{"code", 400},
                {"message", "the request exceeds the available context size, try increasing it"},
                {"type", "exceed_context_size_error"},
                {"n_prompt_tokens", prompt_tokens},
                {"n_ctx", per_slot}}}};
    return SlotRefusal{400, dump(e)};
  }
  if (t.busy >= c.slots) {
    ++t.waited;
    while (t.busy >= c.slots && !runtime().stopping) {
      t.cv.wait_for(lock, std::chrono::milliseconds(50));  // `stopping` is not notified
    }
  }
  const long need = static_cast<long>(prompt_tokens) + gen_tokens;
  if (c.unified && t.reserved_tokens + need > c.n_ctx) {
    return SlotRefusal{
        500, llama_error_json(500, "Context size has been exceeded.", "server_error")};
  }
  ++t.busy;
  t.peak = std::max(t.peak, t.busy);
  const long held = c.unified ? need : 0;
  t.reserved_tokens += held;
  job->hold(std::make_shared<SlotHold>(held));
  return std::nullopt;
}

json slot_state() {
  SlotTable& t = table();
  std::lock_guard lock(t.mu);
  return {{"slots", t.config.slots},
          {"peak_busy_slots", t.peak},
          {"waited_for_slot", t.waited},
          {"busy_slots", t.busy}};
}

}  // namespace fake
