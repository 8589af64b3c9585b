// A run's dollars while it goes, for the live line: what it has cost so far and what it will
// cost when training ends, at a rate (run --rate/--offer, or the spec's output.price).
#pragma once

#include <cstdint>
#include <string>

#include "economics/cost/billing.h"

namespace ftbench::run {

struct RunningCost {
  // What stopping now would be billed: `elapsed` from t0 under the rate's rules (increment,
  // minimum, whole instances).
  double so_far_usd = 0.0;
  // Billed for elapsed + the ETA of the remaining steps: training's end, not the report's
  // (summarize, exports and the report write come on top).
  double projected_usd = 0.0;
};

// `gpus`: the devices the run uses (billed as whole instances of the rate's size).
RunningCost running_cost(const cost::Rate& rate, int64_t gpus, double elapsed_seconds,
                         double eta_seconds);

// "$0.12 so far, ~$0.89 at the end": cents below $100, whole dollars above.
std::string running_cost_text(const RunningCost& c);

}  // namespace ftbench::run
