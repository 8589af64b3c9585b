// What the ranks of a job of several processes say together (report::Distributed's figures),
// from their records: pure, so the figures are checked with exact numbers.
#pragma once

#include <cstdint>

#include "report/report.h"

namespace ftbench::metrics {

// Fills d.step_skew_seconds, d.straggler_rank and d.collective_share from d.ranks, over each
// rank's steps from index `first_step` on (the warm-up left out; every step when none is left),
// the steps that every rank has; and d.tokens_per_second (the job's real tokens per second,
// `job_tokens_per_second`) and its share per device over `world_size`.
void summarize_ranks(report::Distributed& d, int64_t first_step, double job_tokens_per_second,
                     int64_t world_size);

}  // namespace ftbench::metrics
