// The summary statistics of a set of samples as a report records them (summary.step_seconds);
// metrics::summarize computes them.
#pragma once

#include <cstdint>

namespace ftbench::report {

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

}  // namespace ftbench::report
