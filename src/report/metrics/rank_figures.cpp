#include "report/metrics/rank_figures.h"

#include <algorithm>
#include <vector>

#include "util/stats/summary.h"

namespace ftbench::metrics {

void summarize_ranks(report::Distributed& d, int64_t first_step, double job_tokens_per_second,
                     int64_t world_size) {
  d.tokens_per_second = job_tokens_per_second;
  d.tokens_per_second_per_device =
      world_size > 0 ? job_tokens_per_second / double(world_size) : 0.0;
  d.step_skew_seconds = 0.0;
  d.straggler_rank.reset();
  d.collective_share = 0.0;
  if (d.ranks.empty()) return;
  std::size_t common = d.ranks.front().steps.size();
  for (const report::RankRecord& r : d.ranks) common = std::min(common, r.steps.size());
  std::size_t first = static_cast<std::size_t>(std::max<int64_t>(0, first_step));
  if (first >= common) first = 0;
  if (common == 0) return;

  std::vector<double> skews;
  for (std::size_t i = first; i < common; ++i) {
    double lo = d.ranks.front().steps[i].wall_seconds;
    double hi = lo;
    for (const report::RankRecord& r : d.ranks) {
      lo = std::min(lo, r.steps[i].wall_seconds);
      hi = std::max(hi, r.steps[i].wall_seconds);
    }
    skews.push_back(hi - lo);
  }
  d.step_skew_seconds = stats::percentile(skews, 0.5);

  double slowest = -1.0;
  double share_sum = 0.0;
  for (const report::RankRecord& r : d.ranks) {
    double wall = 0.0;
    double collective = 0.0;
    for (std::size_t i = first; i < common; ++i) {
      wall += r.steps[i].wall_seconds;
      collective += r.steps[i].collective_seconds;
    }
    if (wall > slowest) {
      slowest = wall;
      d.straggler_rank = r.rank;
    }
    share_sum += wall > 0.0 ? collective / wall : 0.0;
  }
  d.collective_share = share_sum / double(d.ranks.size());
  // One rank has no straggler.
  if (d.ranks.size() == 1) d.straggler_rank.reset();
}

}  // namespace ftbench::metrics
