#include "data/length_statistics.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "util/stats/summary.h"

namespace ftbench::data {

LengthStatistics length_statistics(const Dataset& dataset, int64_t seq_len) {
  LengthStatistics s;
  std::vector<double> lengths;
  lengths.reserve(static_cast<std::size_t>(dataset.size()));
  for (int64_t i = 0; i < dataset.size(); ++i) {
    const int64_t n = static_cast<int64_t>(dataset.at(i).tokens.size());
    if (n > seq_len) ++s.truncated;
    const int64_t used = std::min(n, seq_len);
    lengths.push_back(double(used));
    s.max = std::max(s.max, used);
  }
  if (!lengths.empty()) {
    double sum = 0.0;
    for (double l : lengths) sum += l;
    s.mean = sum / double(lengths.size());
    s.p50 = stats::percentile(lengths, 0.5);
    s.p90 = stats::percentile(lengths, 0.9);
  }
  return s;
}

}  // namespace ftbench::data
