// The verdicts of `ftbench compare`: each report against the first (A) in one sentence, which
// is faster and which cheaper, whether the step-time difference is significant, and the rate at
// which the other would cost the same.
#pragma once

#include <string>
#include <vector>

#include "analysis/compare/fairness.h"
#include "analysis/compare/side_by_side.h"
#include "util/stats/mann_whitney.h"

namespace ftbench::compare {

// Relative differences below this are reported as equal: timer and billing noise.
inline constexpr double kSameWithin = 0.005;

// "p < 0.001", else "p = 0.123".
std::string p_value_text(double p);

// The Mann-Whitney test in words: "Mann-Whitney U 12, p = 0.040: significant at 0.05", and when
// either side has too few samples, how many would give the test power.
std::string significance(const stats::MannWhitneyResult& test, double alpha);

// One line for a difference between reports: "[job] spec.data.seq_len: A: 512 | B: 1024 — note".
std::string difference_line(const Difference& d);

// The comparison's kind in one line: "fair: same job (...)", "fair: same job run differently
// (...)", or "NOT the same job: ...".
std::string fairness_headline(const Fairness& f);

// The comparison's kind in two or three words: "same job", "same job run differently",
// "different jobs".
std::string fairness_kind(const Fairness& f);

// One sentence for each report after the first, against the first; `alpha` is the significance
// level of the step-time test.
std::vector<std::string> verdicts(const std::vector<Column>& columns, double alpha);

}  // namespace ftbench::compare
