#include "report/metrics/rank_figures.h"

#include <gtest/gtest.h>

namespace ftbench::metrics {
namespace {

report::RankRecord rank(int64_t r, std::vector<std::pair<double, double>> steps) {
  report::RankRecord out;
  out.rank = r;
  for (const auto& [wall, collective] : steps) out.steps.push_back({wall, collective});
  return out;
}

TEST(RankFigures, SkewStragglerAndCollectiveShareOverTheMeasuredSteps) {
  report::Distributed d;
  // Step 1 is the warm-up (left out). Steps 2-4: rank 1 is slower by 0.5, 0.25 and 1.0 s.
  d.ranks = {rank(0, {{9.0, 0.0}, {2.0, 1.0}, {2.0, 1.0}, {4.0, 1.0}}),
             rank(1, {{1.0, 0.0}, {2.5, 0.5}, {2.25, 0.25}, {5.0, 0.5}})};
  summarize_ranks(d, 1, 1000.0, 2);
  EXPECT_EQ(d.step_skew_seconds, 0.5);  // the median of 0.5, 0.25, 1.0
  EXPECT_EQ(d.straggler_rank, 1);       // 9.75 s against 8 s
  // Rank 0: 3 of 8 s; rank 1: 1.25 of 9.75 s.
  EXPECT_DOUBLE_EQ(d.collective_share, (3.0 / 8.0 + 1.25 / 9.75) / 2.0);
  EXPECT_EQ(d.tokens_per_second, 1000.0);
  EXPECT_EQ(d.tokens_per_second_per_device, 500.0);
}

TEST(RankFigures, OnlyStepsEveryRankHasAndEveryStepWhenTheWarmupIsAll) {
  report::Distributed d;
  d.ranks = {rank(0, {{1.0, 0.5}, {3.0, 0.0}, {7.0, 0.0}}), rank(1, {{2.0, 0.0}, {1.0, 0.0}})};
  summarize_ranks(d, 5, 10.0, 2);       // the warm-up covers every common step: all of them count
  EXPECT_EQ(d.step_skew_seconds, 1.5);  // the median of 1 and 2
  EXPECT_EQ(d.straggler_rank, 0);       // 4 s against 3 s over the two common steps
  EXPECT_DOUBLE_EQ(d.collective_share, (0.5 / 4.0 + 0.0) / 2.0);
}

TEST(RankFigures, OneRankHasNoStragglerAndNoRankNoFigures) {
  report::Distributed d;
  d.ranks = {rank(0, {{1.0, 0.25}, {1.0, 0.25}})};
  summarize_ranks(d, 0, 8.0, 2);
  EXPECT_EQ(d.step_skew_seconds, 0.0);
  EXPECT_FALSE(d.straggler_rank.has_value());
  EXPECT_EQ(d.collective_share, 0.25);
  EXPECT_EQ(d.tokens_per_second_per_device, 4.0);
  report::Distributed none;
  summarize_ranks(none, 0, 8.0, 2);
  EXPECT_EQ(none.collective_share, 0.0);
}

}  // namespace
}  // namespace ftbench::metrics
