// What a routing policy reads of the router (routing::RouterState): per
// candidate, whether it is loaded, how many requests wait for it, its size,
// and whether it fits: loaded, or loadable without evicting a pinned model
// or one that is serving. All of it from the router's published view, so
// reading it takes no lock that requests take.
//
// `fits` is the router's own plan, asked in advance: plan_eviction and
// pinned_in_the_way over the view's servers for the slot limits, and
// plan_admission for memory, with the candidate's estimate taken from its
// catalogue size (or, when it has none, its files on disk) on the device
// its recipe's loaded servers use (RAM when none is loaded). The load's
// own admission, later, is exact; this is the estimate a choice needs.
//
// Thread-safety: pure functions over values.
#pragma once

#include <string>
#include <vector>

#include "lemon/models/catalogue.h"
#include "lemon/router/router_view.h"
#include "lemon/routing/route_engine.h"

namespace lemon::inference {

struct CandidateFacts {
  std::string name;
  ModelType type = ModelType::kLlm;
  Device device = Device::kCpu;
  std::int64_t bytes = 0;  // its estimate; 0 when unknown
  double size_gb = 0.0;
};

// The state of each of `candidates` in `view`; `fits` is computed only when
// `with_fits` (it reads the catalogue and maybe the disk).
routing::RouterState candidate_states(const std::vector<CandidateFacts>& candidates,
                                      const RouterView& view, bool with_fits);

// A candidate's facts from its catalogue entry (resolved when it has no
// size, for its files' bytes), with `cli` the router's load options layer.
CandidateFacts candidate_facts(const ModelCatalogue& catalogue, const std::string& name,
                               const RecipeOptions& cli, bool with_bytes);

}  // namespace lemon::inference
