// The examples' lengths over a data set as the batcher sees them (each cut to the sequence
// length): what the report's data statistics give beside the counts (report.data.statistics).
#pragma once

#include <cstdint>

#include "data/dataset.h"

namespace ftbench::data {

struct LengthStatistics {
  double mean = 0.0;
  double p50 = 0.0;  // stats::percentile (numpy "linear")
  double p90 = 0.0;
  int64_t max = 0;
  int64_t truncated = 0;  // examples longer than the sequence length (the batcher cuts them)
};

// Over every example of `dataset`, each length min(tokens, seq_len); zeros for an empty set.
LengthStatistics length_statistics(const Dataset& dataset, int64_t seq_len);

}  // namespace ftbench::data
