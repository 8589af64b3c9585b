#include "util/stats/summary.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace ftbench::stats {
namespace {

// std::sort needs a strict weak order, which NaN breaks (undefined behaviour, not just a wrong
// answer), so non-finite samples are refused up front. Infinity would poison every figure too.
void require_finite(const std::vector<double>& samples) {
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (!std::isfinite(samples[i])) {
      throw std::invalid_argument("statistics: sample " + std::to_string(i) +
                                  " is not a finite number");
    }
  }
}

// numpy's _lerp: interpolates from the nearer end so that t == 1 gives exactly b. Copying its
// rounding makes our percentiles bit-identical to numpy.percentile(method="linear").
double lerp(double a, double b, double t) {
  const double diff = b - a;
  return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

// Percentile of samples already sorted ascending and known to be finite and non-empty.
double sorted_percentile(const std::vector<double>& sorted, double q) {
  const std::size_t n = sorted.size();
  const double rank = q * static_cast<double>(n - 1);
  const double below = std::floor(rank);
  const std::size_t lo = static_cast<std::size_t>(below);
  const std::size_t hi = std::min(lo + 1, n - 1);
  return lerp(sorted[lo], sorted[hi], rank - below);
}

}  // namespace

double percentile(std::vector<double> samples, double q) {
  if (!(q >= 0.0 && q <= 1.0)) {  // also rejects NaN
    throw std::invalid_argument("percentile: q must lie in [0, 1], got " + std::to_string(q));
  }
  if (samples.empty()) return 0.0;
  require_finite(samples);
  std::sort(samples.begin(), samples.end());
  return sorted_percentile(samples, q);
}

SampleSummary summarize(const std::vector<double>& samples) {
  SampleSummary out;
  if (samples.empty()) return out;
  require_finite(samples);

  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  out.count = static_cast<int64_t>(n);
  out.min = sorted.front();
  out.max = sorted.back();
  out.median = sorted_percentile(sorted, 0.5);
  out.p90 = sorted_percentile(sorted, 0.9);
  out.p99 = sorted_percentile(sorted, 0.99);

  // Two passes (mean, then squared deviations) rather than sum of squares: step times share a
  // large common value, where the one-pass formula cancels catastrophically.
  double sum = 0.0;
  for (double x : samples) sum += x;
  out.mean = sum / static_cast<double>(n);
  if (n >= 2) {
    double squares = 0.0;
    for (double x : samples) squares += (x - out.mean) * (x - out.mean);
    out.stddev = std::sqrt(squares / static_cast<double>(n - 1));
  }
  out.cv = out.mean == 0.0 ? 0.0 : out.stddev / out.mean;
  return out;
}

}  // namespace ftbench::stats
