// Expected values follow numpy.quantile(x, q) (method="linear", numpy >= 1.22), reproduced
// with numpy's own interpolation formula (_lerp) in plain Python doubles; stddev is
// numpy.std(x, ddof=1). Where the decimal literal is not the exact double numpy returns, the
// literal below is the full repr() of numpy's result.
#include "util/stats/summary.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace ftbench::stats {
namespace {

TEST(StatsPercentile, MatchesNumpyLinear) {
  const std::vector<double> x = {1, 2, 3, 4};
  EXPECT_EQ(percentile(x, 0.9), 3.7);
  EXPECT_EQ(percentile(x, 0.99), 3.9699999999999998);
  EXPECT_EQ(percentile(x, 0.25), 1.75);
  EXPECT_EQ(percentile(x, 0.5), 2.5);
  EXPECT_EQ(percentile({10, 20}, 0.1), 11.0);
  EXPECT_EQ(percentile({0.1, 0.2, 0.3}, 0.9), 0.28);
}

TEST(StatsPercentile, SortsItsInput) {
  EXPECT_EQ(percentile({4, 1, 3, 2}, 0.5), 2.5);
  EXPECT_EQ(percentile({4, 1, 3, 2}, 0.9), 3.7);
}

TEST(StatsPercentile, EndsAreMinAndMax) {
  const std::vector<double> x = {5, -1, 7, 3};
  EXPECT_EQ(percentile(x, 0.0), -1.0);
  EXPECT_EQ(percentile(x, 1.0), 7.0);
}

TEST(StatsPercentile, EmptyGivesZero) { EXPECT_EQ(percentile({}, 0.9), 0.0); }

TEST(StatsPercentile, SingleSampleIsEveryPercentile) {
  for (double q : {0.0, 0.5, 0.9, 0.99, 1.0}) EXPECT_EQ(percentile({42.5}, q), 42.5);
}

TEST(StatsPercentile, RejectsQOutsideUnitInterval) {
  EXPECT_THROW(percentile({1, 2}, -0.1), std::invalid_argument);
  EXPECT_THROW(percentile({1, 2}, 1.5), std::invalid_argument);
  EXPECT_THROW(percentile({1, 2}, std::nan("")), std::invalid_argument);
}

TEST(StatsPercentile, RejectsNonFiniteSamples) {
  EXPECT_THROW(percentile({1, std::nan(""), 2}, 0.5), std::invalid_argument);
  EXPECT_THROW(percentile({1, std::numeric_limits<double>::infinity()}, 0.5),
               std::invalid_argument);
}

TEST(StatsSummarize, TextbookSample) {
  // Mean 5; squared deviations sum to 32, so the sample variance is 32 / 7.
  const SampleSummary s = summarize({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_EQ(s.count, 8);
  EXPECT_EQ(s.mean, 5.0);
  EXPECT_EQ(s.median, 4.5);
  EXPECT_EQ(s.p90, 7.6);
  EXPECT_EQ(s.p99, 8.86);
  EXPECT_EQ(s.min, 2.0);
  EXPECT_EQ(s.max, 9.0);
  EXPECT_EQ(s.stddev, std::sqrt(32.0 / 7.0));
  EXPECT_EQ(s.stddev, 2.138089935299395);
  EXPECT_EQ(s.cv, 0.427617987059879);
}

TEST(StatsSummarize, UsesSampleNotPopulationStddev) {
  // Population stddev of {1, 3} is 1; the sample (n - 1) stddev is sqrt(2).
  const SampleSummary s = summarize({1, 3});
  EXPECT_EQ(s.stddev, std::sqrt(2.0));
  EXPECT_EQ(s.cv, std::sqrt(2.0) / 2.0);
}

TEST(StatsSummarize, EmptyIsAllZero) {
  const SampleSummary s = summarize({});
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.mean, 0.0);
  EXPECT_EQ(s.median, 0.0);
  EXPECT_EQ(s.p90, 0.0);
  EXPECT_EQ(s.p99, 0.0);
  EXPECT_EQ(s.min, 0.0);
  EXPECT_EQ(s.max, 0.0);
  EXPECT_EQ(s.stddev, 0.0);
  EXPECT_EQ(s.cv, 0.0);
}

TEST(StatsSummarize, SingleSampleHasNoSpread) {
  const SampleSummary s = summarize({0.25});
  EXPECT_EQ(s.count, 1);
  EXPECT_EQ(s.mean, 0.25);
  EXPECT_EQ(s.median, 0.25);
  EXPECT_EQ(s.p90, 0.25);
  EXPECT_EQ(s.p99, 0.25);
  EXPECT_EQ(s.min, 0.25);
  EXPECT_EQ(s.max, 0.25);
  EXPECT_EQ(s.stddev, 0.0);
  EXPECT_EQ(s.cv, 0.0);
}

TEST(StatsSummarize, ZeroMeanGivesZeroCv) {
  const SampleSummary s = summarize({-1, 1});
  EXPECT_EQ(s.mean, 0.0);
  EXPECT_EQ(s.stddev, std::sqrt(2.0));
  EXPECT_EQ(s.cv, 0.0);
}

TEST(StatsSummarize, StableForLargeCommonOffset) {
  // The one-pass sum-of-squares formula loses every digit here; two passes keep them.
  const SampleSummary s = summarize({1e9 + 1, 1e9 + 2, 1e9 + 3});
  EXPECT_EQ(s.mean, 1e9 + 2);
  EXPECT_EQ(s.stddev, 1.0);
}

TEST(StatsSummarize, RejectsNonFiniteSamples) {
  EXPECT_THROW(summarize({1, std::nan("")}), std::invalid_argument);
}

}  // namespace
}  // namespace ftbench::stats
