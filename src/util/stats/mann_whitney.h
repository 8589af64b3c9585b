// Mann-Whitney U test (Wilcoxon rank-sum), two-sided: do two sets of step times come from the
// same distribution? Used by `ftbench compare`, as Google Benchmark's tools/compare.py does
// (it calls scipy.stats.mannwhitneyu(a, b, alternative="two-sided")).
#pragma once

#include <cstdint>
#include <vector>

namespace ftbench::stats {

struct MannWhitneyResult {
  int64_t n1 = 0;        // size of the first sample
  int64_t n2 = 0;        // size of the second sample
  double u1 = 0.0;       // U statistic of the first sample: R1 - n1 (n1 + 1) / 2 (midranks on ties)
  double u2 = 0.0;       // n1 n2 - u1
  double p_value = 1.0;  // two-sided
  bool exact = false;    // p from the exact distribution of U, else the normal approximation
  bool has_ties = false;
  // Fewer than kMannWhitneyOptimalSamples in either sample: the test has little power and the
  // result should be read as a hint (Google Benchmark prints a warning then).
  bool too_few_samples = false;
};

// Google Benchmark's UTEST_OPTIMAL_REPETITIONS.
inline constexpr int64_t kMannWhitneyOptimalSamples = 9;

// Matches scipy.stats.mannwhitneyu(a, b, alternative="two-sided", use_continuity=True,
// method="auto") of SciPy >= 1.7 (checked against 1.10.1). With U = max(u1, u2):
//  - exact when either sample has at most 8 values and the pooled data has no ties:
//    p = 2 * P(U' >= U) under the null distribution of U' (mass at U included), capped at 1;
//  - otherwise the normal approximation with tie correction of the variance,
//    sigma^2 = n1 n2 / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1))), and a continuity correction
//    of 0.5: p = 2 * sf((U - n1 n2 / 2 - 0.5) / sigma), capped at 1 (p = 1 when all values tie).
// Throws std::invalid_argument when a sample is empty or holds a non-finite value (SciPy
// accepts infinities; we do not).
MannWhitneyResult mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace ftbench::stats
