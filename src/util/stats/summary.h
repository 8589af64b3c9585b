// Summary statistics over raw samples. Pure functions, exact and documented.
#pragma once

#include <cstdint>
#include <vector>

namespace ftbench::stats {

// The summary statistics of a set of samples (the report records them: summary.step_seconds).
struct SampleSummary {
  int64_t count = 0;
  double mean = 0.0;
  double median = 0.0;
  double p90 = 0.0;
  double p99 = 0.0;
  double min = 0.0;
  double max = 0.0;
  double stddev = 0.0;  // sample standard deviation (n - 1); 0 when count < 2
  double cv = 0.0;      // stddev / mean; 0 when mean == 0
};

// Percentile by linear interpolation between closest ranks (numpy's default "linear" method):
// rank = q * (n - 1) on the sorted samples. `q` in [0, 1]. Empty input gives 0. Rounds exactly
// as numpy.quantile(samples, q) does. Throws std::invalid_argument when q is outside
// [0, 1] or a sample is not finite (NaN cannot be sorted).
double percentile(std::vector<double> samples, double q);

// All figures of SampleSummary; median, p90 and p99 by percentile() above. Empty input gives
// an all-zero summary with count 0. Throws std::invalid_argument on a non-finite sample.
SampleSummary summarize(const std::vector<double>& samples);

}  // namespace ftbench::stats
