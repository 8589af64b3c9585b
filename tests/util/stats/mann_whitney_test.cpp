// Reference p-values marked "SciPy" were computed once with
// scipy.stats.mannwhitneyu(a, b, alternative='two-sided'), SciPy 1.10.1 (defaults:
// use_continuity=True, method='auto'), and are the full repr() of its result. They are asserted
// to kTol absolute; p-values here are all >= 1e-4, so that is also ~1e-10 relative or better.
#include "util/stats/mann_whitney.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace ftbench::stats {
namespace {

constexpr double kTol = 1e-14;

void expect_u_sum(const MannWhitneyResult& r) {
  EXPECT_EQ(r.u1 + r.u2, static_cast<double>(r.n1 * r.n2));
}

TEST(MannWhitneyU, TextbookDiabetesAges) {
  // R. Shier, "Statistics: 2.3 The Mann-Whitney U Test", Mathematics Learning Support Centre,
  // 2004 (also the worked example of SciPy's mannwhitneyu docs): ages at diagnosis of type II
  // diabetes, males vs females. Published U_M = 17, U_F = 3, two-sided p = 0.11 from the exact
  // distribution; exactly 2 * 7 / C(9, 4) = 1/9 (SciPy: 0.1111111111111111).
  const std::vector<double> males = {19, 22, 16, 29, 24};
  const std::vector<double> females = {20, 11, 17, 12};
  const MannWhitneyResult r = mann_whitney_u(males, females);
  EXPECT_EQ(r.n1, 5);
  EXPECT_EQ(r.n2, 4);
  EXPECT_EQ(r.u1, 17.0);
  EXPECT_EQ(r.u2, 3.0);
  EXPECT_TRUE(r.exact);
  EXPECT_FALSE(r.has_ties);
  EXPECT_TRUE(r.too_few_samples);
  EXPECT_NEAR(r.p_value, 1.0 / 9.0, kTol);
  EXPECT_NEAR(r.p_value, 0.1111111111111111, kTol);
}

TEST(MannWhitneyU, ExactSmallNoTies) {
  // SciPy: U1 = 4, p = 0.05194805194805195 (= 2 * 12 / C(11, 5)).
  const MannWhitneyResult r =
      mann_whitney_u({1.1, 2.3, 3.5, 4.2, 6.8}, {2.9, 5.1, 7.4, 8.0, 9.6, 10.2});
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.u1, 4.0);
  EXPECT_EQ(r.u2, 26.0);
  EXPECT_NEAR(r.p_value, 0.05194805194805195, kTol);
}

TEST(MannWhitneyU, ExactFullySeparated) {
  // SciPy: U1 = 0, p = 0.007936507936507936 (= 2 / C(10, 5)).
  MannWhitneyResult r = mann_whitney_u({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.u1, 0.0);
  EXPECT_EQ(r.u2, 25.0);
  EXPECT_NEAR(r.p_value, 0.007936507936507936, kTol);
  // SciPy: U1 = 0, p = 0.0001554001554001554 (= 2 / C(16, 8)); 8 each is still exact.
  r = mann_whitney_u({1, 2, 3, 4, 5, 6, 7, 8}, {9, 10, 11, 12, 13, 14, 15, 16});
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.u1, 0.0);
  EXPECT_NEAR(r.p_value, 0.0001554001554001554, kTol);
}

TEST(MannWhitneyU, ExactAtTheCentreIsCappedAtOne) {
  // U = n1 n2 / 2: twice P(U >= 2) exceeds 1; SciPy clips to 1.0.
  const MannWhitneyResult r = mann_whitney_u({1, 4}, {2, 3});
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.u1, 2.0);
  EXPECT_EQ(r.p_value, 1.0);
}

TEST(MannWhitneyU, ExactUnequalSizes) {
  // 3 vs 20, no ties: exact because one sample has at most 8 values.
  // SciPy: U1 = 15, p = 0.19649915302089213 (asymptotic would give 0.18561504257338968).
  const std::vector<double> a = {10.338, 9.907, 10.007};
  const std::vector<double> b = {10.382, 10.142, 10.3,   10.301, 9.949,  10.504, 10.42,
                                 10.175, 10.266, 10.401, 10.248, 10.251, 10.009, 10.411,
                                 10.325, 10.355, 9.995,  10.63,  10.331, 10.223};
  const MannWhitneyResult r = mann_whitney_u(a, b);
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.u1, 15.0);
  EXPECT_EQ(r.u2, 45.0);
  EXPECT_NEAR(r.p_value, 0.19649915302089213, kTol);
}

TEST(MannWhitneyU, ExactEightVersusFiftyIsFast) {
  // SciPy: U1 = 104, p = 0.029335819534650844 (asymptotic: 0.03128208360553103).
  const std::vector<double> a = {13.0145, 11.9773, 11.2747, 11.7974,
                                 10.8558, 12.5247, 11.7918, 11.6287};
  const std::vector<double> b = {
      12.9362, 11.5745, 12.6677, 11.3678, 12.0689, 11.7979, 13.131,  13.2831, 12.2353, 12.8204,
      12.31,   12.684,  12.0236, 11.5458, 11.4985, 12.5916, 13.5238, 12.5347, 12.1377, 13.356,
      12.5187, 12.4507, 12.5263, 12.3338, 12.2453, 11.6825, 12.6508, 12.3526, 12.9965, 12.2156,
      11.4468, 12.3502, 13.2498, 12.2083, 11.9551, 11.8032, 11.875,  12.2499, 11.81,   13.1488,
      12.2587, 12.4543, 13.1191, 13.1517, 12.2936, 12.566,  12.7675, 12.3036, 11.511,  12.7274};
  const auto start = std::chrono::steady_clock::now();
  const MannWhitneyResult r = mann_whitney_u(a, b);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.exact);
  EXPECT_EQ(r.u1, 104.0);
  EXPECT_EQ(r.u2, 296.0);
  EXPECT_NEAR(r.p_value, 0.029335819534650844, kTol);
  EXPECT_LT(seconds, 0.1);
}

TEST(MannWhitneyU, AsymptoticNoTies) {
  // 12 vs 15, no ties. SciPy: U1 = 50, p = 0.05392947037277041.
  const std::vector<double> a = {20.894, 20.416, 19.076, 19.804, 19.409, 19.7,
                                 21.297, 21.53,  20.669, 20.549, 20.677, 19.988};
  const std::vector<double> b = {20.924, 20.326, 20.944, 23.26,  21.869, 20.658, 20.528, 20.136,
                                 21.374, 21.392, 19.557, 21.486, 20.431, 22.427, 21.157};
  const MannWhitneyResult r = mann_whitney_u(a, b);
  EXPECT_FALSE(r.exact);
  EXPECT_FALSE(r.has_ties);
  EXPECT_FALSE(r.too_few_samples);
  EXPECT_EQ(r.u1, 50.0);
  EXPECT_EQ(r.u2, 130.0);
  EXPECT_NEAR(r.p_value, 0.05392947037277041, kTol);
}

TEST(MannWhitneyU, AsymptoticWithTiesUsesTieCorrection) {
  // 10 vs 12 integers with many ties. SciPy: U1 = 13, p = 0.001817710994337342. Without the
  // tie correction of the variance it would be 0.0021685684190888687.
  const std::vector<double> a = {13, 11, 10, 10, 11, 11, 11, 13, 12, 10};
  const std::vector<double> b = {13, 13, 15, 13, 14, 15, 11, 12, 15, 12, 15, 14};
  const MannWhitneyResult r = mann_whitney_u(a, b);
  EXPECT_FALSE(r.exact);
  EXPECT_TRUE(r.has_ties);
  EXPECT_EQ(r.u1, 13.0);
  EXPECT_EQ(r.u2, 107.0);
  EXPECT_NEAR(r.p_value, 0.001817710994337342, kTol);
  EXPECT_GT(std::abs(r.p_value - 0.0021685684190888687), 1e-4);
}

TEST(MannWhitneyU, SmallSamplesWithTiesAreAsymptotic) {
  // 4 vs 5 with a tie (3, 3): SciPy's "auto" falls back to the normal approximation.
  // SciPy: U1 = 2 (midranks), p = 0.06506370687881986.
  const MannWhitneyResult r = mann_whitney_u({1, 2, 3, 3}, {2.5, 4, 5, 6, 7});
  EXPECT_FALSE(r.exact);
  EXPECT_TRUE(r.has_ties);
  EXPECT_EQ(r.u1, 2.0);
  EXPECT_EQ(r.u2, 18.0);
  EXPECT_NEAR(r.p_value, 0.06506370687881986, kTol);
}

TEST(MannWhitneyU, IdenticalSamplesGivePOne) {
  // SciPy: U1 = 50, p = 1.0.
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  MannWhitneyResult r = mann_whitney_u(x, x);
  EXPECT_FALSE(r.exact);
  EXPECT_TRUE(r.has_ties);
  EXPECT_EQ(r.u1, 50.0);
  EXPECT_EQ(r.u2, 50.0);
  EXPECT_EQ(r.p_value, 1.0);
  // Every value equal: zero variance. SciPy: U1 = 3, p = 1.0.
  r = mann_whitney_u({3, 3, 3}, {3, 3});
  EXPECT_FALSE(r.exact);
  EXPECT_EQ(r.u1, 3.0);
  EXPECT_EQ(r.p_value, 1.0);
}

TEST(MannWhitneyU, SwappingSamplesSwapsUAndKeepsP) {
  const std::vector<std::vector<double>> as = {
      {19, 22, 16, 29, 24}, {13, 11, 10, 10, 11, 11, 11, 13, 12, 10}, {1, 2, 3, 3}};
  const std::vector<std::vector<double>> bs = {
      {20, 11, 17, 12}, {13, 13, 15, 13, 14, 15, 11, 12, 15, 12, 15, 14}, {2.5, 4, 5, 6, 7}};
  for (std::size_t i = 0; i < as.size(); ++i) {
    const MannWhitneyResult ab = mann_whitney_u(as[i], bs[i]);
    const MannWhitneyResult ba = mann_whitney_u(bs[i], as[i]);
    EXPECT_EQ(ab.n1, ba.n2);
    EXPECT_EQ(ab.n2, ba.n1);
    EXPECT_EQ(ab.u1, ba.u2);
    EXPECT_EQ(ab.u2, ba.u1);
    EXPECT_EQ(ab.exact, ba.exact);
    EXPECT_EQ(ab.p_value, ba.p_value);
    expect_u_sum(ab);
    expect_u_sum(ba);
  }
  // SciPy, arguments swapped (10 vs 12 case): U1 = 107, p = 0.001817710994337342.
  EXPECT_NEAR(mann_whitney_u(bs[1], as[1]).p_value, 0.001817710994337342, kTol);
}

TEST(MannWhitneyU, USumIsProductOfSizes) {
  expect_u_sum(mann_whitney_u({0.5, 0.5, 1.5}, {0.5, 2.0, 2.0, 2.0, 3.0}));
  expect_u_sum(mann_whitney_u({1, 4}, {2, 3}));
  expect_u_sum(mann_whitney_u({7}, {7}));
  expect_u_sum(mann_whitney_u({-1e300, 1e300}, {0, 1, 2}));
}

TEST(MannWhitneyU, TooFewSamplesBelowNineInEither) {
  const std::vector<double> eight = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<double> nine = {11, 12, 13, 14, 15, 16, 17, 18, 19};
  const std::vector<double> ten = {21, 22, 23, 24, 25, 26, 27, 28, 29, 30};
  EXPECT_TRUE(mann_whitney_u(eight, nine).too_few_samples);
  EXPECT_TRUE(mann_whitney_u(ten, eight).too_few_samples);
  EXPECT_TRUE(mann_whitney_u(eight, eight).too_few_samples);
  EXPECT_FALSE(mann_whitney_u(nine, ten).too_few_samples);
  EXPECT_FALSE(mann_whitney_u(nine, nine).too_few_samples);
  EXPECT_EQ(kMannWhitneyOptimalSamples, 9);
}

TEST(MannWhitneyU, RejectsEmptyAndNonFinite) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_THROW(mann_whitney_u({}, {1, 2}), std::invalid_argument);
  EXPECT_THROW(mann_whitney_u({1, 2}, {}), std::invalid_argument);
  EXPECT_THROW(mann_whitney_u({}, {}), std::invalid_argument);
  EXPECT_THROW(mann_whitney_u({1, nan}, {1, 2}), std::invalid_argument);
  EXPECT_THROW(mann_whitney_u({1, 2}, {nan}), std::invalid_argument);
  EXPECT_THROW(mann_whitney_u({1, inf}, {1, 2}), std::invalid_argument);
  EXPECT_THROW(mann_whitney_u({1, 2}, {-inf, 3}), std::invalid_argument);
}

}  // namespace
}  // namespace ftbench::stats
