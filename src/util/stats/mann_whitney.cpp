#include "util/stats/mann_whitney.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <stdexcept>
#include <string>

namespace ftbench::stats {
namespace {

void require_sample(const std::vector<double>& samples, const char* name) {
  if (samples.empty()) {
    throw std::invalid_argument(std::string("mann_whitney_u: sample ") + name + " is empty");
  }
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (!std::isfinite(samples[i])) {
      throw std::invalid_argument(std::string("mann_whitney_u: sample ") + name + "[" +
                                  std::to_string(i) + "] is not a finite number");
    }
  }
}

// P(U <= k) under the null hypothesis for samples of sizes m and n without ties.
//
// The number of arrangements with U = j is the coefficient of q^j in the Gaussian binomial
// [m + n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i) (Di Bucchianico 1999, the
// generating function of the recursion f(m, n, k) = f(m - 1, n, k - n) + f(m, n - 1, k) SciPy
// uses). The product is built one factor at a time as a power series truncated after q^k:
// dividing by (1 - q^i) is a running sum, multiplying by (1 - q^(n+i)) a shifted difference.
// After step i the coefficients are those of [n + i choose i]_q, all non-negative, and scaling
// by i / (n + i) keeps them as probabilities (their total is 1), so nothing overflows however
// large the samples are. O(min(m, n) * k) work.
double exact_cdf(int64_t m, int64_t n, int64_t k) {
  if (k < 0) return 0.0;
  if (k >= m * n) return 1.0;
  if (m > n) std::swap(m, n);  // the distribution is symmetric in m and n; fewer factors
  const auto len = static_cast<std::size_t>(k) + 1;
  std::vector<double> c(len, 0.0);
  c[0] = 1.0;
  for (int64_t i = 1; i <= m; ++i) {
    const auto step = static_cast<std::size_t>(i);
    for (std::size_t j = step; j < len; ++j) c[j] += c[j - step];
    const auto shift = static_cast<std::size_t>(n + i);
    for (std::size_t j = len; j-- > shift;) c[j] -= c[j - shift];
    const double scale = static_cast<double>(i) / static_cast<double>(n + i);
    for (double& v : c) v *= scale;
  }
  return std::accumulate(c.begin(), c.end(), 0.0);
}

}  // namespace

MannWhitneyResult mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  require_sample(a, "a");
  require_sample(b, "b");

  MannWhitneyResult r;
  r.n1 = static_cast<int64_t>(a.size());
  r.n2 = static_cast<int64_t>(b.size());
  r.too_few_samples = r.n1 < kMannWhitneyOptimalSamples || r.n2 < kMannWhitneyOptimalSamples;

  // Midranks of the pooled sample (scipy.stats.rankdata, method="average"), summed over a, and
  // the tie term sum(t^3 - t) over groups of t equal values.
  std::vector<double> pooled(a);
  pooled.insert(pooled.end(), b.begin(), b.end());
  std::vector<std::size_t> order(pooled.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return pooled[x] < pooled[y]; });
  double rank_sum_a = 0.0;
  double tie_term = 0.0;
  for (std::size_t lo = 0; lo < order.size();) {
    std::size_t hi = lo + 1;
    while (hi < order.size() && pooled[order[hi]] == pooled[order[lo]]) ++hi;
    const double t = static_cast<double>(hi - lo);
    const double midrank = 0.5 * static_cast<double>(lo + 1 + hi);  // mean of ranks lo+1..hi
    for (std::size_t j = lo; j < hi; ++j) {
      if (order[j] < a.size()) rank_sum_a += midrank;
    }
    if (hi - lo > 1) {
      r.has_ties = true;
      tie_term += t * t * t - t;
    }
    lo = hi;
  }

  const int64_t n1n2 = r.n1 * r.n2;
  const double n1 = static_cast<double>(r.n1);
  r.u1 = rank_sum_a - n1 * (n1 + 1.0) / 2.0;  // midranks are halves: exact
  r.u2 = static_cast<double>(n1n2) - r.u1;
  const double u = std::max(r.u1, r.u2);  // two-sided: upper tail of the larger U, doubled

  // SciPy's method="auto" (_mwu_choose_method): asymptotic when both samples have more than 8
  // values or when the pooled data holds any tie; exact otherwise.
  r.exact = (r.n1 <= 8 || r.n2 <= 8) && !r.has_ties;
  double p = 1.0;
  if (r.exact) {
    // P(U >= u) = P(U <= n1 n2 - u) by symmetry; includes the mass at u.
    p = 2.0 * exact_cdf(r.n1, r.n2, n1n2 - static_cast<int64_t>(u));
  } else {
    const double n = static_cast<double>(r.n1 + r.n2);
    const double mu = static_cast<double>(n1n2) / 2.0;
    const double var = static_cast<double>(n1n2) / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    const double sigma = std::sqrt(std::max(var, 0.0));
    // Continuity correction: u >= mu, so moving half a step toward the mean subtracts 0.5.
    const double numerator = u - mu - 0.5;
    if (sigma > 0.0) {
      // 2 * norm.sf(z) = erfc(z / sqrt(2)).
      p = std::erfc(numerator / sigma / std::sqrt(2.0));
    } else {
      // Every value tied: u == mu, z = -inf in SciPy, sf = 1, p clipped to 1.
      p = 1.0;
    }
  }
  r.p_value = std::clamp(p, 0.0, 1.0);
  return r;
}

}  // namespace ftbench::stats
