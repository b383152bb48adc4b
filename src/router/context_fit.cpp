#include "lemon/router/context_fit.h"

#include <algorithm>

#include "lemon/core/enum_names.h"
#include "lemon/router/memory_policy.h"

namespace lemon {
namespace {

// The first device where `need` is over `room` ("" when it fits everywhere).
std::string fit_over_budget(const DeviceBytes& need, const DeviceBytes& room) {
  for (const auto& [device, bytes] : need) {
    const auto limit = room.find(device);
    if (limit != room.end() && bytes > limit->second) {
      return device;
    }
  }
  return {};
}

// The device that bounds the context: the one whose share grows with it
// most (the KV cache's).
std::string fit_bounding_device(const DeviceBytes& small, const DeviceBytes& large,
                                const DeviceBytes& room) {
  std::string best;
  std::int64_t growth = -1;
  for (const auto& [device, bytes] : large) {
    const auto before = small.find(device);
    const std::int64_t g = bytes - (before == small.end() ? 0 : before->second);
    if (room.contains(device) && g > growth) {
      best = device;
      growth = g;
    }
  }
  return best;
}

std::int64_t fit_bytes_on(const DeviceBytes& bytes, const std::string& device) {
  const auto it = bytes.find(device);
  return it == bytes.end() ? 0 : it->second;
}

}  // namespace

ContextFit fit_context(const ContextFitAsk& ask,
                       const std::function<DeviceBytes(int ctx)>& estimate) {
  ContextFit fit;
  const bool trained_known = ask.trained.has_value() && *ask.trained > 0;
  fit.ceiling = trained_known ? *ask.trained : kUntrainedContextCap;
  const int floor = std::min(ask.floor, fit.ceiling);
  if (!ask.measured) {
    fit.ctx_size = floor;
    fit.reason = ContextFit::Reason::kNotMeasured;
    return fit;
  }
  const DeviceBytes at_ceiling = estimate(fit.ceiling);
  const DeviceBytes at_floor = estimate(floor);
  fit.device = fit_bounding_device(at_floor, at_ceiling, ask.room);
  fit.room = fit_bytes_on(ask.room, fit.device);
  if (fit_over_budget(at_ceiling, ask.room).empty()) {
    fit.ctx_size = fit.ceiling;
    fit.reason = ContextFit::Reason::kTrainedContext;
    fit.need = fit_bytes_on(at_ceiling, fit.device);
    return fit;
  }
  if (const std::string over = fit_over_budget(at_floor, ask.room); !over.empty()) {
    fit.ctx_size = floor;
    fit.reason = ContextFit::Reason::kFloor;
    fit.device = over;
    fit.room = fit_bytes_on(ask.room, over);
    fit.need = fit_bytes_on(at_floor, over);
    return fit;
  }
  // The floor fits and the ceiling does not: the largest step between.
  int lo = floor;        // fits
  int hi = fit.ceiling;  // does not
  while (hi - lo > kContextStep) {
    int mid = lo + (hi - lo) / 2;
    mid = std::max(lo + kContextStep, mid / kContextStep * kContextStep);
    if (mid >= hi) {
      break;
    }
    if (fit_over_budget(estimate(mid), ask.room).empty()) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  fit.ctx_size = lo;
  fit.reason = ContextFit::Reason::kMemory;
  fit.need = fit_bytes_on(estimate(lo), fit.device);
  return fit;
}

namespace {

constexpr auto kContextFitReasonNames = std::to_array<EnumName<ContextFit::Reason>>(
    {{ContextFit::Reason::kMemory, "memory"},
     {ContextFit::Reason::kTrainedContext, "trained_context"},
     {ContextFit::Reason::kFloor, "floor"},
     {ContextFit::Reason::kNotMeasured, "not_measured"}});

}  // namespace

const char* context_fit_reason_name(ContextFit::Reason reason) {
  return name_of(kContextFitReasonNames, reason, "");
}

std::string describe_context_fit(const ContextFit& fit) {
  std::string tokens = std::to_string(fit.ctx_size) + " tokens";
  const std::string where = fit.device.empty()
                                ? std::string()
                                : " (about " + format_bytes(fit.need) + " of the " +
                                      format_bytes(fit.room) + " " + fit.device + " has left)";
  switch (fit.reason) {
    case ContextFit::Reason::kMemory:
      return tokens +
             ": the largest context that fits the memory budget beside the models "
             "that stay loaded" +
             where;
    case ContextFit::Reason::kTrainedContext:
      return tokens +
             (fit.ceiling == kUntrainedContextCap
                  ? ": the cap for a model whose trained context is unknown, which fits"
                  : ": the model's trained context, which fits") +
             where;
    case ContextFit::Reason::kFloor:
      return tokens +
             ": the least a fitted context gets; even that does not fit beside the "
             "models loaded now, so admission unloads some" +
             where;
    case ContextFit::Reason::kNotMeasured:
      return tokens +
             ": memory is not measured (--memory-budget), so the least a fitted "
             "context gets";
  }
  return tokens;
}

}  // namespace lemon
