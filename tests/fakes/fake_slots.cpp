#include "fake_slots.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
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
  std::string cached;  // the rendered prompt and reply its cache holds
  long last_used = 0;  // task counter when it last ran
};

std::size_t common_prefix(const std::string& a, const std::string& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) {
    ++n;
  }
  return n;
}

struct SlotTable {
  std::mutex mu;
  std::condition_variable cv;
  SlotConfig config;
  std::vector<SlotRecord> slots;
  int busy = 0;
  int peak = 0;
  long waited = 0;
  int queued = 0;            // requests waiting for a slot now
  int peak_queued = 0;       // the most that ever waited at once
  long reserved_tokens = 0;  // unified cache: tokens held by running requests
  int next_task = 0;
  int last_cache_n = 0;
  int last_slot = -1;
  int erased = 0;
  long reads = 0;  // GET /slots answered
  int saved = 0;
  int restored = 0;
  int restore_refused = 0;
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

SlotGrant take_slot(const JobPtr& job, int prompt_tokens, int gen_tokens,
                    const SlotRequest& request) {
  SlotTable& t = table();
  std::unique_lock lock(t.mu);
  const SlotConfig c = t.config;
  if (c.slots <= 0) {
    return {};
  }
  const int per_slot = c.unified ? c.n_ctx : c.n_ctx / c.slots;
  if (prompt_tokens > per_slot) {
    json e = {{"error",
               {{"code", 400},
                {"message", "the request exceeds the available context size, try increasing it"},
                {"type", "exceed_context_size_error"},
                {"n_prompt_tokens", prompt_tokens},
                {"n_ctx", per_slot}}}};
    return {SlotRefusal{400, dump(e)}};
  }
  if (request.id_slot >= c.slots) {
    return {SlotRefusal{400, llama_error_json(400, "Invalid slot ID", "invalid_request_error")}};
  }
  auto blocked = [&] {
    return t.busy >= c.slots ||
           (request.id_slot >= 0 && t.slots[static_cast<std::size_t>(request.id_slot)].busy);
  };
  if (blocked()) {
    ++t.waited;
    t.peak_queued = std::max(t.peak_queued, ++t.queued);
    while (blocked() && !runtime().stopping) {
      t.cv.wait_for(lock, std::chrono::milliseconds(50));  // `stopping` is not notified
    }
    --t.queued;
  }
  const long need = static_cast<long>(prompt_tokens) + gen_tokens;
  if (c.unified && t.reserved_tokens + need > c.n_ctx) {
    return {
        SlotRefusal{500, llama_error_json(500, "Context size has been exceeded.", "server_error")}};
  }
  ++t.busy;
  t.peak = std::max(t.peak, t.busy);
  const long held = c.unified ? need : 0;
  t.reserved_tokens += held;
  std::size_t index = t.slots.size();
  if (request.id_slot >= 0) {
    index = static_cast<std::size_t>(request.id_slot);
  } else {
    // llama-server's choice: the idle slot with the longest common prefix
    // (if at least 10 % of the prompt), else the least recently used.
    std::size_t best_prefix = 0;
    for (std::size_t i = 0; i < t.slots.size(); ++i) {
      if (t.slots[i].busy) {
        continue;
      }
      const std::size_t prefix = common_prefix(t.slots[i].cached, request.prompt_text);
      if (prefix > best_prefix && prefix * 10 >= request.prompt_text.size()) {
        best_prefix = prefix;
        index = i;
      }
    }
    if (index == t.slots.size()) {
      for (std::size_t i = 0; i < t.slots.size(); ++i) {
        if (!t.slots[i].busy &&
            (index == t.slots.size() || t.slots[i].last_used < t.slots[index].last_used)) {
          index = i;
        }
      }
    }
  }
  SlotGrant grant;
  if (index < t.slots.size()) {
    SlotRecord& r = t.slots[index];
    if (request.cache_prompt && !request.prompt_text.empty()) {
      const std::size_t prefix = common_prefix(r.cached, request.prompt_text);
      // At least the last prompt token is evaluated again, as in llama-server.
      grant.cache_n = std::min(std::max(0, prompt_tokens - 1),
                               static_cast<int>(static_cast<long>(prefix) * prompt_tokens /
                                                static_cast<long>(request.prompt_text.size())));
    }
    r.busy = true;
    r.id_task = t.next_task++;
    r.last_used = r.id_task;
    r.n_prompt_tokens = prompt_tokens;
    r.n_decoded = gen_tokens;  // the fake's tokens are all known at once
    r.cached = request.prompt_text;
    grant.slot = static_cast<int>(index);
  }
  t.last_cache_n = grant.cache_n;
  t.last_slot = grant.slot;
  job->hold(std::make_shared<SlotHold>(index, held));
  return grant;
}

void cache_in_slot(int slot, const std::string& cached_text) {
  SlotTable& t = table();
  std::lock_guard lock(t.mu);
  if (slot >= 0 && static_cast<std::size_t>(slot) < t.slots.size()) {
    t.slots[static_cast<std::size_t>(slot)].cached = cached_text;
  }
}

std::optional<int> erase_slot(int slot) {
  SlotTable& t = table();
  std::lock_guard lock(t.mu);
  if (slot < 0 || static_cast<std::size_t>(slot) >= t.slots.size()) {
    return std::nullopt;
  }
  SlotRecord& r = t.slots[static_cast<std::size_t>(slot)];
  const int erased = r.id_task >= 0 ? r.n_prompt_tokens + r.n_decoded : 0;
  r.cached.clear();
  r.n_prompt_tokens = 0;
  ++t.erased;
  return erased;
}

namespace {

constexpr const char* kSlotMagic = "LEMONFAKESLOT1";

bool valid_filename(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..";
}

SlotFileReply slot_error(int status, const std::string& message, const char* type) {
  return {status, llama_error_json(status, message, type)};
}

}  // namespace

SlotFileReply save_slot(int slot, const std::string& dir, const std::string& filename) {
  if (!valid_filename(filename)) {
    return slot_error(400, "Invalid filename", "invalid_request_error");
  }
  const Knobs& knobs = runtime().knobs;
  if (knobs.slot_save_delay_ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(knobs.slot_save_delay_ms));
  }
  const auto started = std::chrono::steady_clock::now();
  SlotTable& t = table();
  std::unique_lock lock(t.mu);
  if (slot < 0 || static_cast<std::size_t>(slot) >= t.slots.size()) {
    return slot_error(400, "Invalid slot ID", "invalid_request_error");
  }
  // llama-server defers a save while its slot works.
  const auto index = static_cast<std::size_t>(slot);
  t.cv.wait(lock, [&] { return !t.slots[index].busy || runtime().stopping; });
  if (knobs.slot_save_fails) {
    return slot_error(500, "Unable to save slot", "server_error");
  }
  const std::string text = t.slots[index].cached;
  const long tokens = approx_tokens(text);
  std::ostringstream header;
  header << kSlotMagic << "\n" << tokens << "\n" << text.size() << "\n";
  std::string file = header.str() + text;
  const auto total = static_cast<std::size_t>(
      std::max<long>(static_cast<long>(file.size()), tokens * kSlotBytesPerToken));
  file.resize(total, '\0');
  const std::size_t written = knobs.slot_save_truncates ? total / 2 : total;
  {
    std::ofstream out(dir + "/" + filename, std::ios::binary | std::ios::trunc);
    out.write(file.data(), static_cast<std::streamsize>(written));
    if (!out) {
      return slot_error(500, "Unable to save slot", "server_error");
    }
  }
  ++t.saved;
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return {200, dump(json{{"id_slot", slot},
                         {"filename", filename},
                         {"n_saved", tokens},
                         {"n_written", total},
                         {"timings", {{"save_ms", ms}}}})};
}

SlotFileReply restore_slot(int slot, const std::string& dir, const std::string& filename) {
  if (!valid_filename(filename)) {
    return slot_error(400, "Invalid filename", "invalid_request_error");
  }
  const auto started = std::chrono::steady_clock::now();
  SlotTable& t = table();
  std::unique_lock lock(t.mu);
  if (slot < 0 || static_cast<std::size_t>(slot) >= t.slots.size()) {
    return slot_error(400, "Invalid slot ID", "invalid_request_error");
  }
  auto refuse = [&t](const std::string& why) {
    ++t.restore_refused;
    return slot_error(400, "Unable to restore slot: " + why, "invalid_request_error");
  };
  if (runtime().knobs.slot_restore_fails) {
    return refuse("No available space in KV cache or invalid slot save file");
  }
  std::ifstream in(dir + "/" + filename, std::ios::binary);
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream header(file);
  std::string magic;
  long tokens = -1;
  long text_size = -1;
  std::getline(header, magic);
  header >> tokens >> text_size;
  header.get();  // the newline after the text's size
  const auto text_at = static_cast<std::size_t>(header.tellg());
  if (!in.good() && file.empty()) {
    return refuse("No available space in KV cache or invalid slot save file");
  }
  if (magic != kSlotMagic || tokens < 0 || text_size < 0 || !header ||
      text_at + static_cast<std::size_t>(text_size) > file.size() ||
      file.size() != static_cast<std::size_t>(std::max<long>(static_cast<long>(text_at) + text_size,
                                                             tokens * kSlotBytesPerToken))) {
    return refuse("No available space in KV cache or invalid slot save file");
  }
  const auto per_slot = t.config.unified ? t.config.n_ctx : t.config.n_ctx / t.config.slots;
  if (tokens > per_slot) {
    return refuse("Restored prompt does not fit in the slot context");
  }
  // As in llama-server, the slot's cache holds the tokens; GET /slots shows
  // them only once a task has run on it.
  SlotRecord& r = t.slots[static_cast<std::size_t>(slot)];
  r.cached = file.substr(text_at, static_cast<std::size_t>(text_size));
  ++t.restored;
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return {200, dump(json{{"id_slot", slot},
                         {"filename", filename},
                         {"n_restored", tokens},
                         {"n_read", file.size()},
                         {"timings", {{"restore_ms", ms}}}})};
}

json slots_json() {
  SlotTable& t = table();
  std::lock_guard lock(t.mu);
  ++t.reads;
  const SlotConfig c = t.config;
  const int per_slot = c.slots <= 0 ? 0 : (c.unified ? c.n_ctx : c.n_ctx / c.slots);
  json out = json::array();
  for (std::size_t i = 0; i < t.slots.size(); ++i) {
    const SlotRecord& r = t.slots[i];
    json slot = {{"id", static_cast<int>(i)},
                 {"n_ctx", per_slot},
                 {"speculative", false},
                 {"is_processing", r.busy && !runtime().knobs.slots_report_idle}};
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
  json cached = json::array();
  for (const auto& r : t.slots) {
    cached.push_back(approx_tokens(r.cached));
  }
  return {{"slots", t.config.slots},
          {"peak_busy_slots", t.peak},
          {"waited_for_slot", t.waited},
          {"queued_for_slot", t.queued},
          {"peak_queued_for_slot", t.peak_queued},
          {"busy_slots", t.busy},
          {"cached_tokens", std::move(cached)},
          {"last_cache_n", t.last_cache_n},
          {"last_slot", t.last_slot},
          {"slots_erased", t.erased},
          {"slots_saved", t.saved},
          {"slots_restored", t.restored},
          {"slot_restores_refused", t.restore_refused},
          {"slots_reads", t.reads}};
}

}  // namespace fake
