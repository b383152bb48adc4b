// llama-server's request slots and context, as the fake imitates them.
//
// With --parallel N (and no --kv-unified) llama-server gives each of its N
// slots --ctx-size / N tokens; a prompt longer than its slot's context gets
// 400 exceed_context_size_error, and requests beyond N wait for a free slot.
// With --parallel left on auto (4 slots) or --kv-unified, the slots share
// one cache of --ctx-size tokens, so requests that fit alone fail together:
// 500 "Context size has been exceeded." (the bug of issue #11 §6).
//
// GET /slots reports each slot (slots_json). /fake/state reports "slots", "peak_busy_slots" and
// "waited_for_slot" (the requests that had to wait because every slot was busy).
#pragma once

#include <optional>
#include <string>

#include "fake_reply.h"
#include "fake_util.h"

namespace fake {

struct SlotConfig {
  int slots = 0;  // 0: no slot model (the other fakes)
  int n_ctx = 0;  // total context: per slot n_ctx / slots unless unified
  bool unified = false;
};
void configure_slots(const SlotConfig& config);

struct SlotRefusal {
  int status;
  std::string body;
};

// What a request asks of the slots, as llama-server reads it: `id_slot`
// (-1: the server picks an idle slot, the one whose cached prompt shares the
// longest prefix with this one when that is at least 10 % of it, else the
// least recently used), and `cache_prompt` (default true: the common prefix
// with the slot's cached prompt is not evaluated again).
struct SlotRequest {
  std::string prompt_text;  // the prompt as the template renders it
  int id_slot = -1;
  bool cache_prompt = true;
};

struct SlotGrant {
  std::optional<SlotRefusal> refusal;
  int slot = -1;
  int cache_n = 0;  // prompt tokens reused from the slot's cache
};

// Waits for a free slot (the requested one, if any) and attaches it to `job`
// (freed when the job ends), or returns the error llama-server answers for a
// request of `prompt_tokens` prompt tokens that will generate `gen_tokens`.
SlotGrant take_slot(const JobPtr& job, int prompt_tokens, int gen_tokens,
                    const SlotRequest& request = {});
// After a task on `slot`: the slot's cache holds its prompt and the reply.
void cache_in_slot(int slot, const std::string& cached_text);
// POST /slots/{id}?action=erase: forgets the slot's cache; the tokens it
// held, or nullopt for an unknown slot.
std::optional<int> erase_slot(int slot);

// POST /slots/{id}?action=save|restore {"filename"} under --slot-save-path,
// as llama-server answers them: {"id_slot","filename","n_saved",
// "n_written","timings":{"save_ms"}} or {..."n_restored","n_read",
// "timings":{"restore_ms"}}, or its error. The file holds the slot's cached
// text behind a header, padded to kSlotBytesPerToken bytes per token, so
// its size grows with the tokens; a file whose size is not what its header
// says (truncated) or that is not a slot file is refused, as are the
// knobs' failures.
inline constexpr long kSlotBytesPerToken = 256;
struct SlotFileReply {
  int status = 200;
  std::string body;
};
SlotFileReply save_slot(int slot, const std::string& dir, const std::string& filename);
SlotFileReply restore_slot(int slot, const std::string& dir, const std::string& filename);

// The slot fields of /fake/state, with each slot's cached tokens, the
// prefix reuse of the last request ("last_cache_n", "last_slot") and how
// often GET /slots was read ("slots_reads").
json slot_state();

// GET /slots as llama-server answers it: one object per slot with id, n_ctx
// (per slot), is_processing and, once a slot has run a task, id_task,
// n_prompt_tokens (the prompt it keeps cached) and next_token[0].n_decoded.
json slots_json();

}  // namespace fake
