// The context fitted to memory (ctx_size -1 or "auto", Lemonade 11's
// meaning): the largest context per slot whose estimate fits what the
// device budgets leave after the servers that stay loaded, as a pure
// function over those figures and the model's estimate at a given context.
//
// The estimate counts `parallel` slots of the context and a draft model's
// KV cache for the same context (WrappedServer::memory_estimate_at). The
// context is at least `floor` (4096, llama-server's --fit-ctx) and at most
// `ceiling` (the model's trained context, or kUntrainedContextCap when its
// header does not say), a multiple of kContextStep below the ceiling. When
// the ceiling is below the floor the ceiling wins: a context is never
// longer than the model was trained for.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "lemon/core/device_bytes.h"

namespace lemon {

// The least context fitted: llama-server's own --fit-ctx default.
inline constexpr int kFittedContextFloor = 4096;
// The most when the model's trained context is unknown.
inline constexpr int kUntrainedContextCap = 32768;
// Contexts are chosen in steps of this many tokens (llama.cpp pads its
// context to 256).
inline constexpr int kContextStep = 256;

struct ContextFitAsk {
  // What the budget leaves on each device after the servers that stay; a
  // device missing here is not limited. Empty with `measured` false: memory
  // is not measured (the floor is taken).
  DeviceBytes room;
  bool measured = true;
  std::optional<int> trained;  // the model's trained context
  int floor = kFittedContextFloor;
};

struct ContextFit {
  enum class Reason {
    kMemory,          // the largest that fits the room
    kTrainedContext,  // the model's trained context fits (or the cap, unknown)
    kFloor,           // not even the floor fits beside the others: admission evicts
    kNotMeasured,     // memory is not measured: the floor
  };
  int ctx_size = 0;
  Reason reason = Reason::kMemory;
  std::string device;     // the device that bounds it ("" when none does)
  std::int64_t room = 0;  // what was left there
  std::int64_t need = 0;  // the estimate there at ctx_size
  int ceiling = 0;        // the most it could have been
};

// `estimate(ctx)`: what the server holds per device with `ctx` tokens per
// slot; it must not shrink as ctx grows.
ContextFit fit_context(const ContextFitAsk& ask,
                       const std::function<DeviceBytes(int ctx)>& estimate);

// "memory", "trained_context", "floor", "not_measured".
const char* context_fit_reason_name(ContextFit::Reason reason);
// Why, in a sentence with the figures.
std::string describe_context_fit(const ContextFit& fit);

}  // namespace lemon
