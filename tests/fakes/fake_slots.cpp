#include "fake_slots.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "fake_runtime.h"
#include "fake_util.h"

namespace fake {
namespace {

// What GET /slots reports of one slot: its last task's prompt stays cached
// after the task ends, as in llama-server.
struct SlotRecord {
  bool busy = false;
  int id_task = -1;
  int n_prompt_tokens = 0;
  int n_decoded = 0;
};

struct SlotTable {
  std::mutex mu;
  std::condition_variable cv;
  SlotConfig config;
  std::vector<SlotRecord> slots;
  int busy = 0;
  int peak = 0;
  long waited = 0;
  long reserved_tokens = 0;  // unified cache: tokens held by running requests
  int next_task = 0;
};

SlotTable& table() {
  static SlotTable t;
  return t;
}

// Frees one slot (and its unified-cache tokens) when the job ends.
class SlotHold {
 public:
  SlotHold(std::size_t index, long tokens) : index_(index), tokens_(tokens) {}
  ~SlotHold() {
    SlotTable& t = table();
    std::lock_guard lock(t.mu);
    --t.busy;
    t.reserved_tokens -= tokens_;
    if (index_ < t.slots.size()) {
      t.slots[index_].busy = false;
    }
    t.cv.notify_all();
  }
  SlotHold(const SlotHold&) = delete;
  SlotHold& operator=(const SlotHold&) = delete;

 private:
  std::size_t index_;
  long tokens_;
};

}  // namespace

void configure_slots(const SlotConfig& config) {
  std::lock_guard lock(table().mu);
  table().config = config;
  table().slots.assign(static_cast<std::size_t>(std::max(config.slots, 0)), SlotRecord{});
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
    return SlotRefusal{500,
                       llama_error_json(500, "Context size has been exceeded.", "server_error")};
  }
  ++t.busy;
  t.peak = std::max(t.peak, t.busy);
  const long held = c.unified ? need : 0;
  t.reserved_tokens += held;
  std::size_t index = 0;
  while (index < t.slots.size() && t.slots[index].busy) {
    ++index;
  }
  if (index < t.slots.size()) {
    SlotRecord& r = t.slots[index];
    r.busy = true;
    r.id_task = t.next_task++;
    r.n_prompt_tokens = prompt_tokens;
    r.n_decoded = gen_tokens;  // the fake's tokens are all known at once
  }
  job->hold(std::make_shared<SlotHold>(index, held));
  return std::nullopt;
}

json slots_json() {
  SlotTable& t = table();
  std::lock_guard lock(t.mu);
  const SlotConfig c = t.config;
  const int per_slot = c.slots <= 0 ? 0 : (c.unified ? c.n_ctx : c.n_ctx / c.slots);
  json out = json::array();
  for (std::size_t i = 0; i < t.slots.size(); ++i) {
    const SlotRecord& r = t.slots[i];
    json slot = {{"id", static_cast<int>(i)},
                 {"n_ctx", per_slot},
                 {"speculative", false},
                 {"is_processing", r.busy}};
    if (r.id_task >= 0) {
      slot["id_task"] = r.id_task;
      slot["n_prompt_tokens"] = r.n_prompt_tokens;
      slot["params"] = {{"n_predict", -1}, {"temperature", 0.8}};
      slot["next_token"] = json::array({{{"has_next_token", r.busy},
                                         {"has_new_line", false},
                                         {"n_remain", -1},
                                         {"n_decoded", r.n_decoded}}});
    }
    out.push_back(std::move(slot));
  }
  return out;
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
