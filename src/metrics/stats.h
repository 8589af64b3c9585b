// Summary statistics over raw samples. Pure functions, exact and documented.
#pragma once

#include <vector>

#include "report/sample_summary.h"

namespace ftbench::metrics {

using report::SampleSummary;

// Percentile by linear interpolation between closest ranks (numpy's default "linear" method):
// rank = q * (n - 1) on the sorted samples. `q` in [0, 1]. Empty input gives 0. Rounds exactly
// as numpy.quantile(samples, q) does. Throws std::invalid_argument when q is outside
// [0, 1] or a sample is not finite (NaN cannot be sorted).
double percentile(std::vector<double> samples, double q);

// All figures of SampleSummary; median, p90 and p99 by percentile() above. Empty input gives
// an all-zero summary with count 0. Throws std::invalid_argument on a non-finite sample.
SampleSummary summarize(const std::vector<double>& samples);

}  // namespace ftbench::metrics
