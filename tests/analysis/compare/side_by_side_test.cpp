// side_by_side, smooth_losses and loss_curve_gap with exact values. The two hand-made reports are
// the reference run of /work/shared/design/FIELD.md: H100 18 min at $2.97/h, MI300X 34 min at
// $2.39/h, both billed per minute.
#include "analysis/compare/side_by_side.h"
#include "analysis/compare/verdicts.h"

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "report/report.h"

namespace ftbench::compare {
namespace {

constexpr double kTol = 1e-12;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<report::StepRecord> steps_with_losses(const std::vector<double>& losses) {
  std::vector<report::StepRecord> out;
  for (std::size_t i = 0; i < losses.size(); ++i) {
    report::StepRecord s;
    s.step = static_cast<int64_t>(i) + 1;
    s.epoch = 1;
    s.loss = losses[i];
    out.push_back(s);
  }
  return out;
}

cost::Rate per_minute(double usd_per_gpu_hour) {
  cost::Rate r;
  r.usd_per_gpu_hour = usd_per_gpu_hour;
  r.billing = cost::Billing::kPerMinute;
  return r;
}

// A report whose run lasts `run_seconds` (one phase from 0), with the given step times and
// losses, and the given timing warm-up.
report::Report make_report(const char* gpu, double run_seconds, const std::vector<double>& walls,
                           const std::vector<double>& losses, int64_t warmup_excluded,
                           double tokens_per_second, double step_p50) {
  report::Report r;
  r.run_name = gpu;
  r.environment.device.name = gpu;
  r.environment.device.backend = "cuda";
  r.spec = nlohmann::ordered_json::parse(R"({"train": {"lr_warmup_steps": 0, "loss_window": 2}})");
  r.phases = {{"training", 0.0, run_seconds}};
  r.steps = steps_with_losses(losses);
  for (std::size_t i = 0; i < walls.size() && i < r.steps.size(); ++i) {
    r.steps[i].wall_seconds = walls[i];
    r.steps[i].real_tokens = 1000;
  }
  r.derived.steps_per_epoch = 1;
  r.derived.effective_batch = 16;
  r.summary.warmup_steps_excluded = warmup_excluded;
  r.summary.measured_steps = static_cast<int64_t>(r.steps.size()) - warmup_excluded;
  r.summary.tokens_per_second_real = tokens_per_second;
  r.summary.step_seconds.median = step_p50;
  r.summary.step_seconds.p90 = step_p50 * 1.5;
  r.summary.loss_window = 2;
  r.summary.mean_last_losses = losses.empty() ? 0.0 : losses.back();
  return r;
}

// H100: 6 steps, the first 2 excluded warm-up (slow); measured 2.0, 2.1, 1.9, 2.2.
report::Report h100() {
  return make_report("H100", 1080.0, {10.0, 9.0, 2.0, 2.1, 1.9, 2.2},
                     {2.0, 2.0, 2.0, 2.0, 2.0, 2.0}, 2, 3000.0, 2.0);
}

// MI300X: 7 steps, the first 2 excluded; measured 2.5, 2.6, 2.4, 2.7, 2.8: all slower.
report::Report mi300x() {
  return make_report("MI300X", 2040.0, {0.5, 0.5, 2.5, 2.6, 2.4, 2.7, 2.8},
                     {6.0, 2.5, 2.25, 2.0, 2.125, 2.0, 2.0}, 2, 2000.0, 2.5);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// smooth_losses

TEST(LossSmoothing, TrailingMeanWindowThree) {
  const std::vector<double> s = smooth_losses(steps_with_losses({4.0, 2.0, kNaN, 6.0, 3.0}), 3);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0], 4.0);  // fewer at the start
  EXPECT_EQ(s[1], 3.0);  // (4 + 2) / 2
  EXPECT_EQ(s[2], 3.0);  // (4 + 2) / 2, the NaN left out
  EXPECT_EQ(s[3], 4.0);  // (2 + 6) / 2
  EXPECT_EQ(s[4], 4.5);  // (6 + 3) / 2
}

TEST(LossSmoothing, FullWindows) {
  const std::vector<double> s = smooth_losses(steps_with_losses({1.0, 2.0, 3.0, 4.0, 5.0}), 3);
  EXPECT_EQ(s, (std::vector<double>{1.0, 1.5, 2.0, 3.0, 4.0}));
}

TEST(LossSmoothing, NoFiniteLossInTheWindowIsNaN) {
  const std::vector<double> s =
      smooth_losses(steps_with_losses({kNaN, kNaN, 3.0, kNaN, kNaN, kNaN}), 3);
  ASSERT_EQ(s.size(), 6u);
  EXPECT_TRUE(std::isnan(s[0]));
  EXPECT_TRUE(std::isnan(s[1]));
  EXPECT_EQ(s[2], 3.0);
  EXPECT_EQ(s[3], 3.0);
  EXPECT_EQ(s[4], 3.0);
  EXPECT_TRUE(std::isnan(s[5]));
}

TEST(LossSmoothing, WindowOneIsTheLossItself) {
  const std::vector<double> s = smooth_losses(steps_with_losses({1.25, 0.5, 7.0}), 1);
  EXPECT_EQ(s, (std::vector<double>{1.25, 0.5, 7.0}));
}

TEST(LossSmoothing, WindowLargerThanTheRun) {
  const std::vector<double> s = smooth_losses(steps_with_losses({1.0, 2.0, 6.0}), 100);
  EXPECT_EQ(s, (std::vector<double>{1.0, 1.5, 3.0}));
}

TEST(LossSmoothing, EmptyAndBadWindow) {
  EXPECT_TRUE(smooth_losses({}, 3).empty());
  EXPECT_THROW(smooth_losses(steps_with_losses({1.0}), 0), std::invalid_argument);
  EXPECT_THROW(smooth_losses(steps_with_losses({1.0}), -1), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// loss_curve_gap

TEST(LossCurveGap, MaxGapAndStepWithoutSkip) {
  const auto a = steps_with_losses({2.0, 2.0, 2.0, 2.0, 2.0, 2.0});
  const auto b = steps_with_losses({6.0, 2.5, 2.25, 2.0, 2.125, 2.0});
  const LossGap g = loss_curve_gap(a, b, 1, 0);
  EXPECT_EQ(g.max_abs_gap, 4.0);
  EXPECT_EQ(g.at_step, 1);
  EXPECT_EQ(g.steps_compared, 6);
}

TEST(LossCurveGap, SkipLeavesTheNoisyStartOut) {
  // Window 2: b smooths to 6, 4.25, 2.375, 2.125, 2.0625, 2.0625; a stays 2.
  const auto a = steps_with_losses({2.0, 2.0, 2.0, 2.0, 2.0, 2.0});
  const auto b = steps_with_losses({6.0, 2.5, 2.25, 2.0, 2.125, 2.0});
  const LossGap g = loss_curve_gap(a, b, 2, 2);
  EXPECT_EQ(g.max_abs_gap, 0.375);
  EXPECT_EQ(g.at_step, 3);
  EXPECT_EQ(g.steps_compared, 4);
  // Smoothing still sees the skipped steps: with skip 3, step 4 compares 2.125.
  const LossGap g3 = loss_curve_gap(a, b, 2, 3);
  EXPECT_EQ(g3.max_abs_gap, 0.125);
  EXPECT_EQ(g3.at_step, 4);
  EXPECT_EQ(g3.steps_compared, 3);
  // Symmetric in its arguments.
  const LossGap r = loss_curve_gap(b, a, 2, 2);
  EXPECT_EQ(r.max_abs_gap, 0.375);
  EXPECT_EQ(r.at_step, 3);
}

TEST(LossCurveGap, NonFiniteStepsAreLeftOut) {
  // b's step 3 is NaN: not compared; b smooths (window 2) to 6, 4.25, 2.5, 2, 2.0625, 2.0625.
  const auto a = steps_with_losses({2.0, 2.0, 2.0, 2.0, 2.0, 2.0});
  const auto b = steps_with_losses({6.0, 2.5, kNaN, 2.0, 2.125, 2.0});
  const LossGap g = loss_curve_gap(a, b, 2, 2);
  EXPECT_EQ(g.steps_compared, 3);
  EXPECT_EQ(g.max_abs_gap, 0.0625);
  EXPECT_EQ(g.at_step, 5);  // the first of two equal gaps
  // A NaN in `a` is left out the same way.
  const auto a_nan = steps_with_losses({2.0, 2.0, 2.0, 2.0, kNaN, 2.0});
  const LossGap h = loss_curve_gap(a_nan, b, 2, 2);
  EXPECT_EQ(h.steps_compared, 2);
  EXPECT_EQ(h.max_abs_gap, 0.0625);
  EXPECT_EQ(h.at_step, 6);
}

TEST(LossCurveGap, OnlyStepsBothRunsReached) {
  const auto a = steps_with_losses({1.0, 1.0, 1.0});
  const auto b = steps_with_losses({1.5, 1.25, 1.0, 9.0, 9.0});
  const LossGap g = loss_curve_gap(a, b, 1, 0);
  EXPECT_EQ(g.steps_compared, 3);
  EXPECT_EQ(g.max_abs_gap, 0.5);
  EXPECT_EQ(g.at_step, 1);
}

TEST(LossCurveGap, NothingCompared) {
  const auto a = steps_with_losses({1.0, 1.0});
  const LossGap g = loss_curve_gap(a, a, 1, 5);
  EXPECT_EQ(g.steps_compared, 0);
  EXPECT_EQ(g.at_step, 0);
  EXPECT_EQ(g.max_abs_gap, 0.0);
  const LossGap e = loss_curve_gap({}, a, 1, 0);
  EXPECT_EQ(e.steps_compared, 0);
  EXPECT_EQ(e.at_step, 0);
}

TEST(LossCurveGap, IdenticalCurvesHaveZeroGap) {
  const auto a = steps_with_losses({3.0, 2.0, 1.5, 1.0});
  const LossGap g = loss_curve_gap(a, a, 2, 0);
  EXPECT_EQ(g.max_abs_gap, 0.0);
  EXPECT_EQ(g.at_step, 1);
  EXPECT_EQ(g.steps_compared, 4);
}

// ---------------------------------------------------------------------------------------------
// side_by_side

TEST(SideBySide, ReferenceRunRatiosAndCosts) {
  SideBySideOptions options;
  options.rates = {per_minute(2.97), per_minute(2.39)};
  options.sources = {"h100.json", "mi300x.json"};
  const std::vector<Column> cols = side_by_side({h100(), mi300x()}, options);
  ASSERT_EQ(cols.size(), 2u);

  const Column& a = cols[0];
  EXPECT_EQ(a.label, "A");
  EXPECT_EQ(a.source, "h100.json");
  EXPECT_EQ(a.run_name, "H100");
  EXPECT_EQ(a.gpu, "H100");
  EXPECT_EQ(a.backend, "cuda");
  EXPECT_EQ(a.times.run_seconds, 1080.0);
  EXPECT_EQ(a.step_p50_seconds, 2.0);
  EXPECT_EQ(a.step_p90_seconds, 3.0);
  EXPECT_EQ(a.measured_steps, 4);
  ASSERT_TRUE(a.cost.has_value());
  EXPECT_NEAR(a.cost->billed_usd, 0.891, kTol);
  // The baseline is not set against itself.
  EXPECT_FALSE(a.run_time_ratio.has_value());
  EXPECT_FALSE(a.throughput_ratio.has_value());
  EXPECT_FALSE(a.step_p50_change.has_value());
  EXPECT_FALSE(a.cost_ratio.has_value());
  EXPECT_FALSE(a.break_even_usd_per_gpu_hour.has_value());
  EXPECT_FALSE(a.step_test.has_value());
  EXPECT_FALSE(a.loss_gap.has_value());

  const Column& b = cols[1];
  EXPECT_EQ(b.label, "B");
  EXPECT_EQ(b.source, "mi300x.json");
  EXPECT_EQ(b.gpu, "MI300X");
  ASSERT_TRUE(b.cost.has_value());
  EXPECT_NEAR(b.cost->billed_usd, 1.3543333333333334, kTol);
  ASSERT_TRUE(b.run_time_ratio.has_value());
  EXPECT_NEAR(*b.run_time_ratio, 2040.0 / 1080.0, kTol);
  ASSERT_TRUE(b.throughput_ratio.has_value());
  EXPECT_NEAR(*b.throughput_ratio, 2.0 / 3.0, kTol);
  ASSERT_TRUE(b.step_p50_change.has_value());
  EXPECT_NEAR(*b.step_p50_change, 0.25, kTol);
  // $1.3543333 / $0.891 (FIELD's "+51 %" is from rounded dollars 1.35 / 0.89).
  ASSERT_TRUE(b.cost_ratio.has_value());
  EXPECT_NEAR(*b.cost_ratio, 1.520014964459409, kTol);
  // 0.891 / (2040 / 3600) under the MI300X's per-minute billing.
  ASSERT_TRUE(b.break_even_usd_per_gpu_hour.has_value());
  EXPECT_NEAR(*b.break_even_usd_per_gpu_hour, 1.5723529411764707, kTol);
}

TEST(SideBySide, StepTestUsesMeasuredStepsOnly) {
  const std::vector<Column> cols = side_by_side({h100(), mi300x()}, SideBySideOptions{});
  ASSERT_TRUE(cols[1].step_test.has_value());
  const stats::MannWhitneyResult& t = *cols[1].step_test;
  // After the 2 warm-up steps of each: 4 H100 steps vs 5 MI300X steps.
  EXPECT_EQ(t.n1, 4);
  EXPECT_EQ(t.n2, 5);
  // Fully separated (every measured H100 step is faster; the warm-up steps would not be):
  // U1 = 0, exact two-sided p = 2 / C(9, 4) = 2 / 126.
  EXPECT_EQ(t.u1, 0.0);
  EXPECT_EQ(t.u2, 20.0);
  EXPECT_TRUE(t.exact);
  EXPECT_NEAR(t.p_value, 2.0 / 126.0, 1e-14);
}

TEST(SideBySide, NoStepTestWithoutMeasuredSteps) {
  report::Report b = mi300x();
  b.summary.warmup_steps_excluded = 7;  // every step is warm-up
  b.summary.measured_steps = 0;
  const std::vector<Column> cols = side_by_side({h100(), b}, SideBySideOptions{});
  EXPECT_FALSE(cols[1].step_test.has_value());
  EXPECT_FALSE(cols[1].step_p50_change.has_value());
  EXPECT_TRUE(cols[1].run_time_ratio.has_value());
}

TEST(SideBySide, WithoutRatesThereAreNoCosts) {
  const std::vector<Column> cols = side_by_side({h100(), mi300x()}, SideBySideOptions{});
  for (const Column& c : cols) {
    EXPECT_FALSE(c.rate.has_value());
    EXPECT_FALSE(c.cost.has_value());
    EXPECT_FALSE(c.cost_ratio.has_value());
    EXPECT_FALSE(c.break_even_usd_per_gpu_hour.has_value());
  }
  EXPECT_TRUE(cols[0].source.empty());
  EXPECT_NEAR(*cols[1].run_time_ratio, 2040.0 / 1080.0, kTol);
}

TEST(SideBySide, CostRatioNeedsBothCosts) {
  SideBySideOptions options;
  options.rates = {per_minute(2.97), std::nullopt};
  const std::vector<Column> cols = side_by_side({h100(), mi300x()}, options);
  EXPECT_TRUE(cols[0].cost.has_value());
  EXPECT_FALSE(cols[1].cost.has_value());
  EXPECT_FALSE(cols[1].cost_ratio.has_value());
  EXPECT_FALSE(cols[1].break_even_usd_per_gpu_hour.has_value());
}

TEST(SideBySide, PerHourBillingReversesTheCostRatio) {
  cost::Rate a = per_minute(2.97);
  cost::Rate b = per_minute(2.39);
  a.billing = cost::Billing::kPerHour;
  b.billing = cost::Billing::kPerHour;
  SideBySideOptions options;
  options.rates = {a, b};
  const std::vector<Column> cols = side_by_side({h100(), mi300x()}, options);
  EXPECT_NEAR(*cols[1].cost_ratio, 2.39 / 2.97, kTol);
  // One billed hour must cost the H100's $2.97.
  EXPECT_NEAR(*cols[1].break_even_usd_per_gpu_hour, 2.97, kTol);
}

TEST(SideBySide, LossGapDefaultsAndOverrides) {
  // Default skip: max(lr_warmup_steps 0, warm-up excluded 2) = 2; default window: the baseline's
  // train.loss_window, 2. MI300X smooths to 6, 4.25, 2.375, 2.125, 2.0625, 2.0625, 2; H100 is 2.
  const std::vector<Column> cols = side_by_side({h100(), mi300x()}, SideBySideOptions{});
  ASSERT_TRUE(cols[1].loss_gap.has_value());
  EXPECT_EQ(cols[1].loss_gap->steps_compared, 4);  // steps 3..6, both reached
  EXPECT_EQ(cols[1].loss_gap->max_abs_gap, 0.375);
  EXPECT_EQ(cols[1].loss_gap->at_step, 3);

  SideBySideOptions options;
  options.loss_skip_steps = 0;
  options.loss_window = 1;
  const std::vector<Column> raw = side_by_side({h100(), mi300x()}, options);
  EXPECT_EQ(raw[1].loss_gap->steps_compared, 6);
  EXPECT_EQ(raw[1].loss_gap->max_abs_gap, 4.0);
  EXPECT_EQ(raw[1].loss_gap->at_step, 1);

  // The larger lr warm-up of any report raises the default skip.
  report::Report b = mi300x();
  b.spec["train"]["lr_warmup_steps"] = 3;
  const std::vector<Column> skip3 = side_by_side({h100(), b}, SideBySideOptions{});
  EXPECT_EQ(skip3[1].loss_gap->steps_compared, 3);
  EXPECT_EQ(skip3[1].loss_gap->max_abs_gap, 0.125);
  EXPECT_EQ(skip3[1].loss_gap->at_step, 4);
}

TEST(SideBySide, MemoryAndMfu) {
  report::Report a = h100();
  a.memory.peak_allocated_bytes = 40'000'000'000;
  a.memory.peak_rss_bytes = 8'000'000'000;
  report::MfuEntry mfu;
  mfu.formula = "lora_frozen_base";
  mfu.mfu = 0.42;
  a.summary.mfu = {mfu};
  report::Report b = mi300x();
  b.memory.peak_rss_bytes = 9'000'000'000;
  const std::vector<Column> cols = side_by_side({a, b}, SideBySideOptions{});
  EXPECT_EQ(cols[0].peak_memory_bytes, std::optional<int64_t>(40'000'000'000));
  EXPECT_EQ(cols[0].peak_memory_kind, "allocated (device)");
  EXPECT_EQ(cols[0].mfu, std::optional<double>(0.42));
  EXPECT_EQ(cols[0].mfu_formula, "lora_frozen_base");
  EXPECT_EQ(cols[1].peak_memory_bytes, std::optional<int64_t>(9'000'000'000));
  EXPECT_EQ(cols[1].peak_memory_kind, "RSS (host)");
  EXPECT_FALSE(cols[1].mfu.has_value());
  EXPECT_EQ(cols[1].final_loss, 2.0);
  EXPECT_EQ(cols[1].loss_window, 2);
  // A CPU run of schema 1.9 counts its tensors' bytes: named as such, not as a device's.
  report::Report cpu = mi300x();
  cpu.environment.device.backend = "cpu";
  cpu.memory.peak_allocated_bytes = 12'000'000;
  cpu.memory.peak_rss_bytes = 200'000'000;
  const std::vector<Column> with_cpu = side_by_side({a, cpu}, SideBySideOptions{});
  EXPECT_EQ(with_cpu[1].peak_memory_bytes, std::optional<int64_t>(12'000'000));
  EXPECT_EQ(with_cpu[1].peak_memory_kind, "tensors (CPU, counted)");
}

// The measured GEMM peaks of both reports (FIELD.md: about 720 bf16 TFLOP/s on an H100, 620 on
// an MI300X) and each run's MFU against its own.
TEST(SideBySide, MeasuredGemmPeaks) {
  report::Report a = h100();
  report::MfuEntry mfu;
  mfu.formula = "lora_frozen_base";
  mfu.mfu = 0.30;
  mfu.mfu_gemm = 0.41;
  a.summary.mfu = {mfu};
  a.summary.gemm_peak_tflops = 720.0;
  report::Report b = mi300x();
  mfu.mfu = 0.12;
  mfu.mfu_gemm.reset();
  b.summary.mfu = {mfu};
  const std::vector<Column> cols = side_by_side({a, b}, SideBySideOptions{});
  EXPECT_EQ(cols[0].gemm_peak_tflops, std::optional<double>(720.0));
  EXPECT_EQ(cols[0].mfu_gemm, std::optional<double>(0.41));
  EXPECT_FALSE(cols[1].gemm_peak_tflops.has_value());  // run without --gemm
  EXPECT_FALSE(cols[1].mfu_gemm.has_value());
  EXPECT_EQ(cols[1].mfu, std::optional<double>(0.12));
}

// Figures at the edge of what a report holds: a run of 0 billed seconds has no break-even rate
// (it used to throw, and compare said so without naming a file), and a ratio against a
// vanishing baseline is left unset rather than infinite ("infx" in the table).
TEST(SideBySide, ZeroRunsAndVanishingBaselinesGiveNoRatio) {
  report::Report zero = make_report("H100", 0.0, {0.0, 0.0}, {2.0, 2.0}, 0, 3000.0, 2.0);
  SideBySideOptions options;
  options.rates = {per_minute(2.97), per_minute(2.39)};
  std::vector<Column> cols;
  ASSERT_NO_THROW(cols = side_by_side({h100(), zero}, options));
  EXPECT_FALSE(cols[1].break_even_usd_per_gpu_hour.has_value());
  EXPECT_TRUE(cols[1].cost.has_value());

  report::Report tiny = make_report("H100", 1e-320, {0.0}, {2.0}, 0, 1e-320, 1e-320);
  cols = side_by_side({tiny, mi300x()}, options);
  EXPECT_FALSE(cols[1].run_time_ratio.has_value());
  EXPECT_FALSE(cols[1].throughput_ratio.has_value());
  EXPECT_FALSE(cols[1].step_p50_change.has_value());
}

TEST(SideBySide, EdgeCases) {
  EXPECT_TRUE(side_by_side({}, SideBySideOptions{}).empty());
  SideBySideOptions wrong;
  wrong.rates = {per_minute(2.97)};
  EXPECT_THROW(side_by_side({h100(), mi300x()}, wrong), std::invalid_argument);
  // A single report: its column, nothing set against a baseline.
  const std::vector<Column> one = side_by_side({h100()}, SideBySideOptions{});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_FALSE(one[0].run_time_ratio.has_value());
}

// ---------------------------------------------------------------------------------------------
// scaling

// 1 H100 at 3000 tokens/s against 4 at 9600: 3.2x on 4x the devices, 80 % of linear.
TEST(SideBySide, ScalingEfficiencyIsStrongAtTheSameJobAndWeakAtTheSameBatchPerDevice) {
  report::Report one = h100();
  one.spec_fingerprint = "job";
  report::Report four = make_report("H100", 400.0, {1.0, 1.0, 1.0, 1.0, 1.0, 1.0},
                                    {2.0, 2.0, 2.0, 2.0, 2.0, 2.0}, 2, 9600.0, 1.0);
  four.world_size = 4;
  four.spec_fingerprint = "job";
  std::vector<Column> cols = side_by_side({one, four}, {});
  ASSERT_TRUE(cols[1].scaling_efficiency.has_value());
  EXPECT_NEAR(*cols[1].scaling_efficiency, 0.8, kTol);
  EXPECT_EQ(cols[1].scaling, "strong");
  EXPECT_FALSE(cols[0].scaling_efficiency.has_value());
  const std::vector<std::string> v = verdicts(cols, 0.05);
  EXPECT_NE(v[0].find("B (4 x H100) vs A (1 x H100): "), std::string::npos) << v[0];
  EXPECT_NE(v[0].find("; strong scaling efficiency 80.0% (throughput 3.20x on 4x the devices)"),
            std::string::npos)
      << v[0];

  // The batch per device held (16 on one, 64 over four): weak scaling, the same figure.
  four.spec_fingerprint = "bigger job";
  four.derived.effective_batch = 64;
  cols = side_by_side({one, four}, {});
  EXPECT_EQ(cols[1].scaling, "weak");
  EXPECT_NEAR(*cols[1].scaling_efficiency, 0.8, kTol);

  // Neither batch kept, or other devices, or the same count: no scaling figure.
  four.derived.effective_batch = 32;
  EXPECT_FALSE(side_by_side({one, four}, {})[1].scaling_efficiency.has_value());
  four.derived.effective_batch = 16;
  four.spec_fingerprint = "job";
  four.environment.device.name = "H200";
  EXPECT_FALSE(side_by_side({one, four}, {})[1].scaling_efficiency.has_value());
  four.environment.device.name = "H100";
  four.world_size = 1;
  EXPECT_FALSE(side_by_side({one, four}, {})[1].scaling_efficiency.has_value());
}

namespace {

// A run on the CPU: `ranks` processes on one host of `cores` logical cores, each with
// `threads` intra-op threads, at `tokens_per_second`.
report::Report cpu_run(int64_t ranks, int64_t threads, int64_t cores, double tokens_per_second) {
  report::Report r = make_report("AMD EPYC", 100.0, {1.0, 1.0, 1.0, 1.0, 1.0, 1.0},
                                 {2.0, 2.0, 2.0, 2.0, 2.0, 2.0}, 2, tokens_per_second, 1.0);
  r.environment.device.backend = "cpu";
  r.environment.host.hostname = "box";
  r.environment.host.cpu_logical_cores = cores;
  r.environment.software.intra_op_threads = threads;
  r.spec_fingerprint = "job";
  r.world_size = ranks;
  if (ranks > 1) {
    report::Distributed d;
    d.launch = "local";
    for (int64_t i = 0; i < ranks; ++i) {
      report::RankRecord rank;
      rank.rank = i;
      rank.host = "box";
      rank.device = "cpu";
      d.ranks.push_back(rank);
    }
    r.distributed = d;
  }
  return r;
}

}  // namespace

// Two ranks on the two cores one process used (each asking for 2 threads): 5.08x the tokens on
// no more cores is not "254 % strong scaling".
TEST(SideBySide, RanksThatShareCoresAreSaidToAndTheirScalingIsNoScaling) {
  const std::vector<Column> cols =
      side_by_side({cpu_run(1, 2, 2, 1000.0), cpu_run(2, 2, 2, 5080.0)}, {});
  const std::vector<std::string> v = verdicts(cols, 0.05);
  EXPECT_NE(v[0].find("ranks share cores: 2 ranks x 2 threads on the 2 logical cores of one "
                      "host (A: 1 rank x 2 threads on 2)"),
            std::string::npos)
      << v[0];
  EXPECT_EQ(v[0].find("scaling efficiency"), std::string::npos) << v[0];
  // Ranks with cores of their own (8 cores, 2 threads each) keep the figure.
  const std::vector<Column> apart =
      side_by_side({cpu_run(1, 2, 8, 1000.0), cpu_run(2, 2, 8, 1800.0)}, {});
  const std::vector<std::string> w = verdicts(apart, 0.05);
  EXPECT_NE(w[0].find("strong scaling efficiency 90.0%"), std::string::npos) << w[0];
  EXPECT_EQ(w[0].find("share cores"), std::string::npos) << w[0];
}

}  // namespace ftbench::compare
