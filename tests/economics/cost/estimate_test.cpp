// Billing rules and cost estimates, with exact values. The golden cases are the public reference
// run of /work/shared/design/FIELD.md (H100 vs MI300X, 13 Sep 2026): same job, 375 optimizer
// steps (3 epochs of 125 steps), H100 about 18 min at $2.97/h, MI300X about 34 min at $2.39/h,
// both billed per minute.
#include "economics/cost/estimate.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "economics/cost/billing.h"
#include "report/report.h"
#include "spec/limits.h"

namespace ftbench::cost {
namespace {

constexpr double kTol = 1e-12;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Rate rate_of(double usd_per_gpu_hour, Billing billing, int64_t min_billed_seconds = 0,
             int64_t gpus_per_instance = 1) {
  Rate r;
  r.usd_per_gpu_hour = usd_per_gpu_hour;
  r.billing = billing;
  r.min_billed_seconds = min_billed_seconds;
  r.gpus_per_instance = gpus_per_instance;
  return r;
}

// The H100 leg of the reference run: 18 min, 3 epochs of 125 steps.
RunTimes h100_times() {
  RunTimes t;
  t.run_seconds = 1080.0;
  t.time_to_first_step_seconds = 180.0;  // about 3 min from fresh box to first step
  t.training_seconds = 840.0;
  t.steps = 375;
  t.epochs = 3.0;
  t.examples = 375 * 16;  // effective batch 16
  t.trained_tokens = 1'500'000;
  t.steady_tokens_per_second = 2400.0;
  t.gpus = 1;
  return t;
}

// The MI300X leg: 34 min, same job.
RunTimes mi300x_times() {
  RunTimes t = h100_times();
  t.run_seconds = 2040.0;
  t.time_to_first_step_seconds = 840.0;  // about 14 min, mostly the image pull
  return t;
}

// Expects `fn` to throw std::invalid_argument whose message contains `needle`.
template <typename Fn>
void expect_invalid(Fn fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected std::invalid_argument containing \"" << needle << "\"";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << needle;
  }
}

report::Report hand_made_report() {
  report::Report r;
  r.world_size = 2;
  r.t0_before_process_seconds = 77.5;
  // Deliberately out of order: the run ends at the latest phase end, 1000 + 2.5.
  r.phases = {{"launch", 0.0, 2.0},
              {"report_write", 1000.0, 2.5},
              {"backend_init", 2.0, 3.0},
              {"training", 100.0, 900.0}};
  r.time_to_first_step_seconds = 180.0;
  const double walls[] = {1.5, 2.0, 2.5, 3.0, 1.0};
  for (int i = 0; i < 5; ++i) {
    report::StepRecord s;
    s.step = i + 1;
    s.epoch = i / 2 + 1;
    s.wall_seconds = walls[i];
    s.real_tokens = 100 * (i + 1);
    s.padded_tokens = 1000;
    r.steps.push_back(s);
  }
  r.derived.steps_per_epoch = 2;
  r.derived.effective_batch = 16;
  r.summary.tokens_per_second_real = 1234.5;
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// billed_seconds

TEST(BillingSeconds, PerSecondRoundsUpToWholeSeconds) {
  EXPECT_EQ(billed_seconds(12.3, Billing::kPerSecond, 0), 13.0);
  EXPECT_EQ(billed_seconds(12.0, Billing::kPerSecond, 0), 12.0);
  EXPECT_EQ(billed_seconds(1080.0, Billing::kPerSecond, 0), 1080.0);
  EXPECT_EQ(billed_seconds(0.2, Billing::kPerSecond, 0), 1.0);
}

TEST(BillingSeconds, PerMinuteExactMultipleIsNotRoundedUp) {
  EXPECT_EQ(billed_seconds(1080.0, Billing::kPerMinute, 0), 1080.0);
  EXPECT_EQ(billed_seconds(2040.0, Billing::kPerMinute, 0), 2040.0);
  EXPECT_EQ(billed_seconds(60.0, Billing::kPerMinute, 0), 60.0);
}

TEST(BillingSeconds, PerMinutePartMinuteRoundsUp) {
  EXPECT_EQ(billed_seconds(1080.5, Billing::kPerMinute, 0), 1140.0);
  EXPECT_EQ(billed_seconds(1080.001, Billing::kPerMinute, 0), 1140.0);
  EXPECT_EQ(billed_seconds(1.0, Billing::kPerMinute, 0), 60.0);
  EXPECT_EQ(billed_seconds(1079.9, Billing::kPerMinute, 0), 1080.0);
}

TEST(BillingSeconds, OneNanosecondOfSlack) {
  // A timer reading a hair past a whole minute is that minute (1080.0000000001 s: 18 min).
  EXPECT_EQ(billed_seconds(1080.0000000001, Billing::kPerMinute, 0), 1080.0);
  EXPECT_EQ(billed_seconds(1080.0 + 0.5e-9, Billing::kPerMinute, 0), 1080.0);
  // 1 microsecond past is a real overrun: the next minute is billed.
  EXPECT_EQ(billed_seconds(1080.000001, Billing::kPerMinute, 0), 1140.0);
  EXPECT_EQ(billed_seconds(12.0000000001, Billing::kPerSecond, 0), 12.0);
  EXPECT_EQ(billed_seconds(3600.0000000001, Billing::kPerHour, 0), 3600.0);
}

TEST(BillingSeconds, PerHourRoundsUpToWholeHours) {
  EXPECT_EQ(billed_seconds(1080.0, Billing::kPerHour, 0), 3600.0);
  EXPECT_EQ(billed_seconds(2040.0, Billing::kPerHour, 0), 3600.0);
  EXPECT_EQ(billed_seconds(3600.0, Billing::kPerHour, 0), 3600.0);
  EXPECT_EQ(billed_seconds(3600.5, Billing::kPerHour, 0), 7200.0);
}

TEST(BillingSeconds, UnknownBillsLinearly) {
  EXPECT_EQ(billed_seconds(1080.5, Billing::kUnknown, 0), 1080.5);
  EXPECT_EQ(billed_seconds(12.3, Billing::kUnknown, 0), 12.3);
  EXPECT_EQ(billed_seconds(0.0, Billing::kUnknown, 0), 0.0);
}

TEST(BillingSeconds, MinimumApplies) {
  EXPECT_EQ(billed_seconds(30.0, Billing::kPerSecond, 60), 60.0);
  EXPECT_EQ(billed_seconds(90.0, Billing::kPerSecond, 60), 90.0);
  EXPECT_EQ(billed_seconds(1080.0, Billing::kPerMinute, 3600), 3600.0);
  EXPECT_EQ(billed_seconds(3700.0, Billing::kPerMinute, 3600), 3720.0);
  EXPECT_EQ(billed_seconds(30.0, Billing::kUnknown, 60), 60.0);
  EXPECT_EQ(billed_seconds(0.0, Billing::kPerMinute, 300), 300.0);
}

TEST(BillingSeconds, ZeroDurationBillsNothingWithoutMinimum) {
  EXPECT_EQ(billed_seconds(0.0, Billing::kPerSecond, 0), 0.0);
  EXPECT_EQ(billed_seconds(0.0, Billing::kPerMinute, 0), 0.0);
  EXPECT_EQ(billed_seconds(0.0, Billing::kPerHour, 0), 0.0);
}

TEST(BillingSeconds, NegativeOrNonFiniteDurationThrows) {
  EXPECT_THROW(billed_seconds(-1.0, Billing::kPerSecond, 0), std::invalid_argument);
  EXPECT_THROW(billed_seconds(-1e-12, Billing::kPerMinute, 0), std::invalid_argument);
  EXPECT_THROW(billed_seconds(-5.0, Billing::kUnknown, 0), std::invalid_argument);
  EXPECT_THROW(billed_seconds(kNaN, Billing::kPerMinute, 0), std::invalid_argument);
  EXPECT_THROW(billed_seconds(kNaN, Billing::kUnknown, 0), std::invalid_argument);
  EXPECT_THROW(billed_seconds(kInf, Billing::kPerHour, 0), std::invalid_argument);
  EXPECT_THROW(billed_seconds(-kInf, Billing::kPerHour, 0), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// billed_gpus, check_rate

TEST(BillingGpus, WholeInstances) {
  EXPECT_EQ(billed_gpus(1, 1), 1);
  EXPECT_EQ(billed_gpus(1, 8), 8);
  EXPECT_EQ(billed_gpus(8, 8), 8);
  EXPECT_EQ(billed_gpus(9, 8), 16);
  EXPECT_EQ(billed_gpus(16, 8), 16);
  EXPECT_EQ(billed_gpus(3, 2), 4);
  EXPECT_EQ(billed_gpus(4, 1), 4);
}

TEST(BillingGpus, NonPositiveCountsThrow) {
  EXPECT_THROW(billed_gpus(0, 8), std::invalid_argument);
  EXPECT_THROW(billed_gpus(1, 0), std::invalid_argument);
  EXPECT_THROW(billed_gpus(-1, 1), std::invalid_argument);
}

TEST(BillingCheckRate, AcceptsAValidRate) {
  EXPECT_NO_THROW(check_rate(rate_of(2.97, Billing::kPerMinute)));
  EXPECT_NO_THROW(check_rate(rate_of(0.01, Billing::kUnknown, 3600, 8)));
}

TEST(BillingCheckRate, RejectsBadPrice) {
  expect_invalid([] { check_rate(rate_of(0.0, Billing::kPerMinute)); }, "found 0");
  expect_invalid([] { check_rate(rate_of(-2.5, Billing::kPerMinute)); }, "-2.5");
  EXPECT_THROW(check_rate(rate_of(kNaN, Billing::kPerMinute)), std::invalid_argument);
  EXPECT_THROW(check_rate(rate_of(kInf, Billing::kPerMinute)), std::invalid_argument);
}

TEST(BillingCheckRate, RejectsNegativeMinimum) {
  expect_invalid([] { check_rate(rate_of(2.97, Billing::kPerMinute, -60)); }, "-60");
}

TEST(BillingCheckRate, RejectsGpusPerInstanceBelowOne) {
  expect_invalid([] { check_rate(rate_of(2.97, Billing::kPerMinute, 0, 0)); }, "found 0");
  expect_invalid([] { check_rate(rate_of(2.97, Billing::kPerMinute, 0, -8)); }, "-8");
}

// ---------------------------------------------------------------------------------------------
// estimate: the reference run

TEST(EstimateReferenceRun, H100PerMinute) {
  const Cost c = estimate(h100_times(), rate_of(2.97, Billing::kPerMinute));
  EXPECT_EQ(c.gpus_billed, 1);
  EXPECT_EQ(c.run_seconds, 1080.0);
  EXPECT_EQ(c.billed_seconds, 1080.0);
  EXPECT_TRUE(c.billing_known);
  // 18 min at $2.97/h = 0.3 h * 2.97 = $0.891 (FIELD: "about $0.89").
  EXPECT_NEAR(c.billed_usd, 0.891, kTol);
  EXPECT_DOUBLE_EQ(c.billed_usd, 0.891);
  EXPECT_NEAR(c.linear_usd, 0.891, kTol);
  // 3 epochs (375 steps, 125 per epoch): $0.297 per epoch (FIELD: "about $0.30 per epoch").
  ASSERT_TRUE(c.per_epoch_usd.has_value());
  EXPECT_NEAR(*c.per_epoch_usd, 0.297, kTol);
  ASSERT_TRUE(c.per_step_usd.has_value());
  EXPECT_NEAR(*c.per_step_usd, 0.891 / 375.0, kTol);
  EXPECT_NEAR(*c.per_step_usd, 0.002376, kTol);
  // 1.5 M trained tokens: $0.891 / 1.5 = $0.594 per million.
  ASSERT_TRUE(c.per_million_tokens_usd.has_value());
  EXPECT_NEAR(*c.per_million_tokens_usd, 0.594, kTol);
  // 3 min before the first step: 0.05 h * 2.97 = $0.1485, a sixth of the run.
  EXPECT_NEAR(c.before_first_step_usd, 0.1485, kTol);
  EXPECT_NEAR(c.before_first_step_share, 1.0 / 6.0, kTol);
  // Training only: 840 s = 14 min, 0.2333 h * 2.97 = $0.693, / 3 epochs = $0.231.
  ASSERT_TRUE(c.per_epoch_training_usd.has_value());
  EXPECT_NEAR(*c.per_epoch_training_usd, 0.231, kTol);
}

TEST(EstimateReferenceRun, Mi300xPerMinute) {
  const Cost c = estimate(mi300x_times(), rate_of(2.39, Billing::kPerMinute));
  EXPECT_EQ(c.billed_seconds, 2040.0);
  // 34 min at $2.39/h = 2040 / 3600 * 2.39 = $1.354333... (FIELD: "about $1.35").
  EXPECT_NEAR(c.billed_usd, 2040.0 / 3600.0 * 2.39, kTol);
  EXPECT_NEAR(c.billed_usd, 1.3543333333333334, kTol);
  ASSERT_TRUE(c.per_epoch_usd.has_value());
  // FIELD: "about $0.45 per epoch".
  EXPECT_NEAR(*c.per_epoch_usd, 0.45144444444444445, kTol);
  EXPECT_NEAR(c.before_first_step_share, 840.0 / 2040.0, kTol);
}

TEST(EstimateReferenceRun, CostRatioAndBreakEvenPerMinute) {
  const Rate h100 = rate_of(2.97, Billing::kPerMinute);
  const Rate mi300x = rate_of(2.39, Billing::kPerMinute);
  const Cost a = estimate(h100_times(), h100);
  const Cost b = estimate(mi300x_times(), mi300x);
  // 1.3543333 / 0.891 = 1.520015. FIELD says "+51 %", computed from the rounded dollars
  // 1.35 / 0.89 = 1.5169; the unrounded ratio is +52.0 %.
  EXPECT_NEAR(b.billed_usd / a.billed_usd, 1.520014964459409, 1e-12);
  // The MI300X would have to cost 0.891 / (2040 / 3600) = $1.5723529/h to match the H100.
  const double be = break_even_usd_per_gpu_hour(mi300x_times(), mi300x, a.billed_usd);
  EXPECT_NEAR(be, 0.891 / (2040.0 / 3600.0), kTol);
  EXPECT_NEAR(be, 1.5723529411764707, kTol);
  // At the break-even rate the MI300X costs exactly the H100's bill.
  EXPECT_NEAR(estimate(mi300x_times(), rate_of(be, Billing::kPerMinute)).billed_usd, 0.891, kTol);
}

TEST(EstimateReferenceRun, PerHourBillingHidesTheGap) {
  // FIELD: "Hourly-minimum billing would have rounded both runs to a full hour and hidden the
  // gap": both bill 3600 s, and the MI300X, at the lower hourly price, becomes the cheaper one.
  const Cost a = estimate(h100_times(), rate_of(2.97, Billing::kPerHour));
  const Cost b = estimate(mi300x_times(), rate_of(2.39, Billing::kPerHour));
  EXPECT_EQ(a.billed_seconds, 3600.0);
  EXPECT_EQ(b.billed_seconds, 3600.0);
  EXPECT_NEAR(a.billed_usd, 2.97, kTol);
  EXPECT_NEAR(b.billed_usd, 2.39, kTol);
  EXPECT_LT(b.billed_usd, a.billed_usd);
  // Linear cost is unchanged by the billing rule.
  EXPECT_NEAR(a.linear_usd, 0.891, kTol);
  EXPECT_NEAR(b.linear_usd, 1.3543333333333334, kTol);
  // Per-hour break-even for the MI300X against the H100's hourly bill: one billed hour.
  EXPECT_NEAR(break_even_usd_per_gpu_hour(mi300x_times(), rate_of(2.39, Billing::kPerHour), 2.97),
              2.97, kTol);
}

// ---------------------------------------------------------------------------------------------
// estimate: the other fields

TEST(EstimateCost, LinearVersusBilled) {
  RunTimes t = h100_times();
  t.run_seconds = 1080.5;
  const Cost c = estimate(t, rate_of(2.97, Billing::kPerMinute));
  EXPECT_EQ(c.billed_seconds, 1140.0);
  EXPECT_NEAR(c.billed_usd, 0.9405, kTol);
  EXPECT_NEAR(c.linear_usd, 0.8914125, kTol);
  ASSERT_TRUE(c.per_epoch_usd.has_value());
  EXPECT_NEAR(*c.per_epoch_usd, 0.3135, kTol);  // per-unit figures use the billed cost
}

TEST(EstimateCost, UnknownBillingIsLinearAndFlagged) {
  RunTimes t = h100_times();
  t.run_seconds = 1080.5;
  const Cost c = estimate(t, rate_of(2.97, Billing::kUnknown));
  EXPECT_FALSE(c.billing_known);
  EXPECT_EQ(c.billed_seconds, 1080.5);
  EXPECT_NEAR(c.billed_usd, 0.8914125, kTol);
  EXPECT_NEAR(c.linear_usd, 0.8914125, kTol);
}

TEST(EstimateCost, MinimumRaisesTheBill) {
  const Cost c = estimate(h100_times(), rate_of(2.97, Billing::kPerSecond, 3600));
  EXPECT_EQ(c.billed_seconds, 3600.0);
  EXPECT_NEAR(c.billed_usd, 2.97, kTol);
  EXPECT_NEAR(c.linear_usd, 0.891, kTol);
}

TEST(EstimateCost, WholeInstancesAreBilled) {
  // One GPU used on an 8-GPU instance pays for 8.
  const Cost c = estimate(h100_times(), rate_of(2.97, Billing::kPerMinute, 0, 8));
  EXPECT_EQ(c.gpus_billed, 8);
  EXPECT_NEAR(c.billed_usd, 8 * 0.891, kTol);
  EXPECT_NEAR(c.linear_usd, 8 * 0.891, kTol);
  EXPECT_NEAR(*c.per_epoch_usd, 8 * 0.297, kTol);
  EXPECT_NEAR(*c.per_epoch_training_usd, 8 * 0.231, kTol);
  EXPECT_NEAR(c.before_first_step_usd, 8 * 0.1485, kTol);
  EXPECT_NEAR(c.before_first_step_share, 1.0 / 6.0, kTol);  // a share, not dollars

  RunTimes two = h100_times();
  two.gpus = 9;
  EXPECT_EQ(estimate(two, rate_of(2.97, Billing::kPerMinute, 0, 8)).gpus_billed, 16);
  EXPECT_EQ(estimate(two, rate_of(2.97, Billing::kPerMinute)).gpus_billed, 9);
}

TEST(EstimateCost, UnitsOfZeroGiveNoPerUnitFigure) {
  RunTimes t = h100_times();
  t.epochs = 0.0;
  t.steps = 0;
  t.trained_tokens = 0;
  const Cost c = estimate(t, rate_of(2.97, Billing::kPerMinute));
  EXPECT_FALSE(c.per_epoch_usd.has_value());
  EXPECT_FALSE(c.per_epoch_training_usd.has_value());
  EXPECT_FALSE(c.per_step_usd.has_value());
  EXPECT_FALSE(c.per_million_tokens_usd.has_value());
  EXPECT_NEAR(c.billed_usd, 0.891, kTol);
}

TEST(EstimateCost, FractionalEpochs) {
  RunTimes t = h100_times();
  t.epochs = 1.5;
  const Cost c = estimate(t, rate_of(2.97, Billing::kPerMinute));
  EXPECT_NEAR(*c.per_epoch_usd, 0.594, kTol);
}

TEST(EstimateCost, ZeroSecondRunHasZeroShare) {
  RunTimes t;
  const Cost c = estimate(t, rate_of(2.97, Billing::kPerSecond));
  EXPECT_EQ(c.before_first_step_share, 0.0);
  EXPECT_EQ(c.billed_usd, 0.0);
  EXPECT_EQ(c.linear_usd, 0.0);
}

TEST(EstimateCost, BadRateThrows) {
  EXPECT_THROW(estimate(h100_times(), rate_of(0.0, Billing::kPerMinute)), std::invalid_argument);
  EXPECT_THROW(estimate(h100_times(), rate_of(2.97, Billing::kPerMinute, 0, 0)),
               std::invalid_argument);
  RunTimes t = h100_times();
  t.run_seconds = -1.0;
  EXPECT_THROW(estimate(t, rate_of(2.97, Billing::kPerMinute)), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// project

TEST(EstimateProject, FixedPlusTrainingSeconds) {
  // 1.5 M tokens at 2400 tokens/s = 625 s at steady state; the other 1080 - 625 = 455 s are
  // fixed. 22.5 M tokens (FIELD's standard workload) take 22.5e6 / 2400 = 9375 s more.
  const Projection p = project(h100_times(), rate_of(2.97, Billing::kPerMinute), 22.5e6);
  EXPECT_EQ(p.tokens, 22.5e6);
  EXPECT_NEAR(p.fixed_seconds, 455.0, kTol);
  EXPECT_NEAR(p.training_seconds, 9375.0, kTol);
  EXPECT_NEAR(p.total_seconds, 9830.0, kTol);
  // 9830 s is 163.83 min: 164 min = 9840 s billed per minute.
  EXPECT_EQ(p.cost.run_seconds, p.total_seconds);
  EXPECT_EQ(p.cost.billed_seconds, 9840.0);
  EXPECT_NEAR(p.cost.billed_usd, 9840.0 / 3600.0 * 2.97, 1e-11);
  EXPECT_NEAR(p.cost.billed_usd, 8.118, 1e-11);
  EXPECT_NEAR(p.cost.linear_usd, 8.10975, 1e-11);
  EXPECT_EQ(p.cost.gpus_billed, 1);
  EXPECT_FALSE(p.cost.per_epoch_usd.has_value());
  EXPECT_FALSE(p.cost.per_epoch_training_usd.has_value());
  EXPECT_FALSE(p.cost.per_step_usd.has_value());
  EXPECT_FALSE(p.cost.per_million_tokens_usd.has_value());
}

TEST(EstimateProject, ProjectingTheMeasuredTokensGivesTheRunTime) {
  const Projection p = project(h100_times(), rate_of(2.97, Billing::kPerMinute), 1.5e6);
  EXPECT_NEAR(p.total_seconds, 1080.0, kTol);
  EXPECT_NEAR(p.cost.billed_usd, 0.891, kTol);
}

TEST(EstimateProject, FixedTimeIsNeverNegative) {
  RunTimes t = h100_times();
  t.steady_tokens_per_second = 1000.0;  // 1.5 M tokens would take 1500 s > 1080 s
  const Projection p = project(t, rate_of(2.97, Billing::kPerSecond), 3.6e6);
  EXPECT_EQ(p.fixed_seconds, 0.0);
  EXPECT_NEAR(p.training_seconds, 3600.0, kTol);
  EXPECT_NEAR(p.total_seconds, 3600.0, kTol);
  EXPECT_NEAR(p.cost.billed_usd, 2.97, kTol);
}

TEST(EstimateProject, GpusCarryOver) {
  RunTimes t = h100_times();
  t.gpus = 2;
  const Projection p = project(t, rate_of(2.97, Billing::kPerMinute, 0, 8), 22.5e6);
  EXPECT_EQ(p.cost.gpus_billed, 8);
  EXPECT_NEAR(p.cost.billed_usd, 8 * 8.118, 1e-10);
}

TEST(EstimateProject, Errors) {
  const Rate r = rate_of(2.97, Billing::kPerMinute);
  RunTimes no_steady = h100_times();
  no_steady.steady_tokens_per_second = 0.0;
  expect_invalid([&] { project(no_steady, r, 1e6); }, "steady-state throughput");
  no_steady.steady_tokens_per_second = kNaN;
  EXPECT_THROW(project(no_steady, r, 1e6), std::invalid_argument);
  expect_invalid([&] { project(h100_times(), r, 0.0); }, "projected tokens must be > 0");
  EXPECT_THROW(project(h100_times(), r, -1.0), std::invalid_argument);
  EXPECT_THROW(project(h100_times(), r, kNaN), std::invalid_argument);
  EXPECT_THROW(project(h100_times(), r, kInf), std::invalid_argument);
}

// A throughput so low that the job never ends in finite time is the report's figure's fault:
// named, rather than billing's "duration must be >= 0 seconds, found inf".
TEST(EstimateProject, ThroughputTooLowForAFiniteTimeNamesTheField) {
  RunTimes t = h100_times();
  t.steady_tokens_per_second = 1e-320;
  expect_invalid([&] { project(t, rate_of(2.97, Billing::kPerMinute), 1e6); },
                 "summary.tokens_per_second.real: 1e-320 tokens/s is too low to project 1000000 "
                 "tokens (no finite time)");
  t.steady_tokens_per_second = 0.0;
  expect_invalid([&] { project(t, rate_of(2.97, Billing::kPerMinute), 1e6); },
                 "summary.tokens_per_second.real is 0");
}

// ---------------------------------------------------------------------------------------------
// tokens_for_examples / tokens_for_epochs / break-even

TEST(EstimateTokens, ForExamples) {
  // 1.5 M tokens over 6000 examples: 250 tokens per example.
  EXPECT_NEAR(tokens_for_examples(h100_times(), 5000.0), 1.25e6, 1e-6);
  EXPECT_NEAR(tokens_for_examples(h100_times(), 6000.0), 1.5e6, 1e-6);
  EXPECT_NEAR(tokens_for_examples(h100_times(), 1.0), 250.0, 1e-9);
}

TEST(EstimateTokens, ForEpochs) {
  // 1.5 M tokens over 3 epochs: 500 k tokens per epoch.
  EXPECT_NEAR(tokens_for_epochs(h100_times(), 3.0), 1.5e6, 1e-6);
  EXPECT_NEAR(tokens_for_epochs(h100_times(), 1.5), 7.5e5, 1e-6);
  EXPECT_NEAR(tokens_for_epochs(h100_times(), 10.0), 5e6, 1e-6);
}

TEST(EstimateTokens, NothingTrainedThrows) {
  RunTimes t = h100_times();
  t.examples = 0;
  EXPECT_THROW(tokens_for_examples(t, 10.0), std::invalid_argument);
  t = h100_times();
  t.trained_tokens = 0;
  EXPECT_THROW(tokens_for_examples(t, 10.0), std::invalid_argument);
  EXPECT_THROW(tokens_for_epochs(t, 1.0), std::invalid_argument);
  t = h100_times();
  t.epochs = 0.0;
  EXPECT_THROW(tokens_for_epochs(t, 1.0), std::invalid_argument);
  // The messages name the report's fields they come from.
  expect_invalid([&] { tokens_for_epochs(t, 1.0); }, "derived.steps_per_epoch");
  t = h100_times();
  t.examples = 0;
  expect_invalid([&] { tokens_for_examples(t, 10.0); }, "derived.effective_batch");
}

TEST(EstimateBreakEven, UsesBillingRulesNotThePrice) {
  // The rate's price is ignored: only its billing rules matter.
  const double a =
      break_even_usd_per_gpu_hour(mi300x_times(), rate_of(2.39, Billing::kPerMinute), 0.891);
  const double b =
      break_even_usd_per_gpu_hour(mi300x_times(), rate_of(99.0, Billing::kPerMinute), 0.891);
  EXPECT_EQ(a, b);
  // Whole instances: 8 GPUs billed share the target.
  EXPECT_NEAR(
      break_even_usd_per_gpu_hour(mi300x_times(), rate_of(2.39, Billing::kPerMinute, 0, 8), 0.891),
      1.5723529411764707 / 8.0, kTol);
  // A minimum of an hour: one billed hour.
  EXPECT_NEAR(
      break_even_usd_per_gpu_hour(mi300x_times(), rate_of(2.39, Billing::kPerSecond, 3600), 0.891),
      0.891, kTol);
}

TEST(EstimateBreakEven, ZeroBilledSecondsThrows) {
  RunTimes t;
  t.run_seconds = 0.0;
  EXPECT_THROW(break_even_usd_per_gpu_hour(t, rate_of(2.39, Billing::kPerSecond), 1.0),
               std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// run_times

TEST(EstimateRunTimes, FromAHandMadeReport) {
  const RunTimes t = run_times(hand_made_report());
  // t0 lies 77.5 s before the process; the last phase ends at 1002.5 s.
  EXPECT_EQ(t.run_seconds, 1080.0);
  EXPECT_EQ(t.time_to_first_step_seconds, 180.0);
  EXPECT_EQ(t.training_seconds, 10.0);  // 1.5 + 2 + 2.5 + 3 + 1
  EXPECT_EQ(t.steps, 5);
  EXPECT_EQ(t.epochs, 2.5);           // 5 steps / 2 per epoch
  EXPECT_EQ(t.examples, 80);          // 5 * 16
  EXPECT_EQ(t.trained_tokens, 1500);  // 100 + 200 + 300 + 400 + 500, padding not counted
  EXPECT_EQ(t.steady_tokens_per_second, 1234.5);
  EXPECT_EQ(t.gpus, 2);
}

TEST(EstimateRunTimes, ProcessStartT0) {
  report::Report r = hand_made_report();
  r.t0_before_process_seconds = 0.0;
  EXPECT_EQ(run_times(r).run_seconds, 1002.5);
}

TEST(EstimateRunTimes, NoStepsPerEpochGivesZeroEpochs) {
  report::Report r = hand_made_report();
  r.derived.steps_per_epoch = 0;
  EXPECT_EQ(run_times(r).epochs, 0.0);
}

TEST(EstimateRunTimes, NoStepsIsNotAnError) {
  report::Report r = hand_made_report();
  r.steps.clear();
  const RunTimes t = run_times(r);
  EXPECT_EQ(t.steps, 0);
  EXPECT_EQ(t.training_seconds, 0.0);
  EXPECT_EQ(t.trained_tokens, 0);
  EXPECT_EQ(t.examples, 0);
  EXPECT_EQ(t.epochs, 0.0);
}

TEST(EstimateRunTimes, NoPhasesThrows) {
  report::Report r = hand_made_report();
  r.phases.clear();
  expect_invalid([&] { run_times(r); }, "timing.phases");
}

TEST(EstimateRunTimes, EstimateOfTheReport) {
  // The hand-made report at $2.97/h per minute on 2 GPUs: 1080 s -> 18 min * 2 GPUs.
  const Cost c = estimate(run_times(hand_made_report()), rate_of(2.97, Billing::kPerMinute));
  EXPECT_EQ(c.gpus_billed, 2);
  EXPECT_NEAR(c.billed_usd, 2 * 0.891, kTol);
  EXPECT_NEAR(*c.per_epoch_usd, 2 * 0.891 / 2.5, kTol);
  EXPECT_NEAR(*c.per_step_usd, 2 * 0.891 / 5.0, kTol);
  EXPECT_NEAR(*c.per_million_tokens_usd, 2 * 0.891 / 1500.0 * 1e6, 1e-9);
}

TEST(EstimateCost, EachSegmentOfAResumedRunIsBilledOnItsOwn) {
  // Interrupted after 125 s, resumed for 130 s: per-minute billing rounds each rental up
  // (180 + 180 s), not their sum (255 -> 300 s).
  report::Report r;
  r.phases = {{"launch", 0.0, 1.0}, {"training", 1.0, 129.0}};
  r.segments = {{1, "interrupted", "", "", 1, 5, 125.0, 20.0, "", 0, std::nullopt},
                {2, "completed", "", "", 6, 10, 130.0, 25.0, "ck/step-00000005", 0, std::nullopt}};
  const RunTimes t = run_times(r);
  EXPECT_EQ(t.run_seconds, 255.0);
  EXPECT_EQ(t.time_to_first_step_seconds, 45.0);
  EXPECT_EQ(t.segment_seconds, (std::vector<double>{125.0, 130.0}));
  const Cost c = estimate(t, rate_of(3.6, Billing::kPerMinute));
  EXPECT_EQ(c.billed_seconds, 360.0);
  EXPECT_NEAR(c.billed_usd, 0.36, kTol);
  EXPECT_NEAR(c.linear_usd, 0.255, kTol);
  // One segment: the phases decide, as before 1.3.
  r.segments.resize(1);
  EXPECT_EQ(run_times(r).run_seconds, 130.0);
  EXPECT_TRUE(run_times(r).segment_seconds.empty());
}

}  // namespace ftbench::cost

namespace ftbench::cost {
namespace {

// The spec checks output.price against its own copy of billing's bounds (spec may not include
// cost): the two pairs are one.
TEST(Billing, TheSpecsPriceBoundsAreBillings) {
  EXPECT_EQ(spec::kMinPriceUsdPerGpuHour, kMinUsdPerGpuHour);
  EXPECT_EQ(spec::kMaxPriceUsdPerGpuHour, kMaxUsdPerGpuHour);
}

}  // namespace
}  // namespace ftbench::cost
