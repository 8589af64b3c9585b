#include "report/metrics/run_summary.h"

#include <gtest/gtest.h>

namespace ftbench::metrics {
namespace {

report::StepRecord step(int64_t i, double seconds, double wait, int64_t real, int64_t padded,
                        double loss) {
  report::StepRecord r;
  r.step = i;
  r.wall_seconds = seconds;
  r.data_wait_seconds = wait;
  r.real_tokens = real;
  r.padded_tokens = padded;
  r.loss = loss;
  return r;
}

TEST(RunSummary, ExcludesWarmupAndComputesThroughput) {
  const std::vector<report::StepRecord> steps = {
      step(1, 10.0, 1.0, 100, 200, 5.0), step(2, 2.0, 0.5, 300, 400, 4.0),
      step(3, 4.0, 0.5, 500, 600, 3.0), step(4, 2.0, 0.0, 200, 200, 2.0)};
  std::vector<model::StepFlops> flops(4);
  for (auto& f : flops) f = {4e12, 5e12, 6e12, 7e12, 3e12};
  SummaryOptions o;
  o.warmup_steps = 1;
  o.loss_window = 2;
  o.peak_tflops = 10.0;
  o.peak_source = "--peak-tflops";
  const report::Summary s = summarize_run(steps, flops, o);
  EXPECT_EQ(s.warmup_steps_excluded, 1);
  EXPECT_EQ(s.measured_steps, 3);
  EXPECT_DOUBLE_EQ(s.step_seconds.mean, 8.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.step_seconds.median, 2.0);
  EXPECT_DOUBLE_EQ(s.tokens_per_second_real, 1000.0 / 8.0);
  EXPECT_DOUBLE_EQ(s.tokens_per_second_padded, 1200.0 / 8.0);
  EXPECT_DOUBLE_EQ(s.padding_fraction, 1.0 - 1000.0 / 1200.0);
  EXPECT_DOUBLE_EQ(s.data_wait_fraction, 1.0 / 8.0);
  // No recompute entries without checkpointing; the executed count last.
  ASSERT_EQ(s.mfu.size(), 3u);
  EXPECT_EQ(s.mfu[0].formula, "lora_frozen_base");
  EXPECT_DOUBLE_EQ(s.mfu[0].flops_per_step, 4e12);
  EXPECT_DOUBLE_EQ(s.mfu[0].achieved_tflops, 12.0 / 8.0);
  EXPECT_DOUBLE_EQ(*s.mfu[0].mfu, 0.15);
  EXPECT_EQ(s.mfu[1].formula, "six_n");
  EXPECT_DOUBLE_EQ(s.mfu[1].achieved_tflops, 18.0 / 8.0);
  EXPECT_EQ(s.mfu[2].formula, "executed");
  EXPECT_FALSE(s.mfu[2].recompute);
  EXPECT_DOUBLE_EQ(s.mfu[2].flops_per_step, 3e12);
  EXPECT_DOUBLE_EQ(s.mfu[2].achieved_tflops, 9.0 / 8.0);
  EXPECT_DOUBLE_EQ(*s.mfu[2].mfu, 0.1125);
  EXPECT_DOUBLE_EQ(s.final_loss, 2.0);
  EXPECT_EQ(s.loss_window, 2);
  EXPECT_DOUBLE_EQ(s.mean_last_losses, 2.5);
}

// The measured GEMM peak is a second denominator next to the datasheet one: achieved / peak.
TEST(RunSummary, TheWarmupIsLeftOutOfEverySegment) {
  // Steps 1-3 in the first process, 4-6 after a resume: with a warm-up of 1, steps 1 and 4 are
  // left out.
  std::vector<report::StepRecord> steps;
  for (int64_t i = 1; i <= 6; ++i) {
    steps.push_back(step(i, i == 1 || i == 4 ? 9.0 : 1.0, 0.0, 100, 100, 1.0));
    steps.back().segment = i <= 3 ? 1 : 2;
  }
  SummaryOptions o;
  o.warmup_steps = 1;
  const report::Summary s = summarize_run(steps, {}, o);
  EXPECT_EQ(s.warmup_steps_excluded, 2);
  EXPECT_EQ(s.measured_steps, 4);
  EXPECT_EQ(s.tokens_per_second_real, 100.0);
  // A warm-up as long as every segment: every step counts.
  o.warmup_steps = 3;
  EXPECT_EQ(summarize_run(steps, {}, o).measured_steps, 6);
}

TEST(RunSummary, MfuAgainstTheMeasuredGemmPeak) {
  const std::vector<report::StepRecord> steps = {step(1, 2.0, 0.0, 100, 100, 1.0),
                                                 step(2, 2.0, 0.0, 100, 100, 1.0)};
  SummaryOptions o;
  o.peak_tflops = 10.0;
  o.peak_source = "spec";
  o.gemm_peak_tflops = 8.0;
  o.gemm_peak_source = "gemm file: g.json fp32 512x512x512";
  const report::Summary s = summarize_run(steps, {{4e12, 0, 5e12, 0}, {4e12, 0, 5e12, 0}}, o);
  EXPECT_EQ(s.gemm_peak_tflops, 8.0);
  EXPECT_EQ(s.gemm_peak_source, "gemm file: g.json fp32 512x512x512");
  ASSERT_EQ(s.mfu.size(), 3u);
  EXPECT_EQ(s.mfu[0].achieved_tflops, 2.0);  // 8e12 FLOP over 4 s
  EXPECT_EQ(*s.mfu[0].mfu, 0.2);
  EXPECT_EQ(*s.mfu[0].mfu_gemm, 0.25);
  EXPECT_EQ(*s.mfu[1].mfu_gemm, 2.5 / 8.0);

  // Without a measured peak (or a zero one) mfu_gemm stays null while mfu does not.
  o.gemm_peak_tflops.reset();
  o.gemm_peak_source = "none";
  EXPECT_FALSE(summarize_run(steps, {}, o).mfu[0].mfu_gemm.has_value());
  o.gemm_peak_tflops = 0.0;
  EXPECT_FALSE(summarize_run(steps, {}, o).mfu[0].mfu_gemm.has_value());
  EXPECT_TRUE(summarize_run(steps, {}, o).mfu[0].mfu.has_value());
}

// A job of 4 devices: the steps' FLOPs are the job's, so MFU is over 4 peaks.
TEST(RunSummary, MfuOfAJobOfSeveralDevicesIsOverEveryDevicesPeak) {
  const std::vector<report::StepRecord> steps = {step(1, 2.0, 0.0, 100, 100, 1.0),
                                                 step(2, 2.0, 0.0, 100, 100, 1.0)};
  SummaryOptions o;
  o.peak_tflops = 10.0;
  o.gemm_peak_tflops = 8.0;
  o.devices = 4;
  const report::Summary s = summarize_run(steps, {{4e12, 0, 5e12, 0}, {4e12, 0, 5e12, 0}}, o);
  EXPECT_EQ(s.peak_tflops, 10.0);  // one device's
  EXPECT_EQ(s.mfu[0].achieved_tflops, 2.0);
  EXPECT_EQ(*s.mfu[0].mfu, 0.05);         // 2 / (10 x 4)
  EXPECT_EQ(*s.mfu[0].mfu_gemm, 0.0625);  // 2 / (8 x 4)
}

TEST(RunSummary, RecomputeEntriesAndNoPeak) {
  const std::vector<report::StepRecord> steps = {step(1, 1.0, 0.0, 10, 10, 1.0)};
  SummaryOptions o;
  o.warmup_steps = 5;  // more than the run: every step is measured
  o.recompute = true;
  const report::Summary s = summarize_run(steps, {{1e12, 2e12, 3e12, 4e12, 1.5e12}}, o);
  EXPECT_EQ(s.warmup_steps_excluded, 0);
  EXPECT_EQ(s.measured_steps, 1);
  ASSERT_EQ(s.mfu.size(), 5u);
  EXPECT_TRUE(s.mfu[2].recompute);
  EXPECT_DOUBLE_EQ(s.mfu[2].achieved_tflops, 2.0);
  EXPECT_DOUBLE_EQ(s.mfu[3].achieved_tflops, 4.0);
  EXPECT_EQ(s.mfu[4].formula, "executed");
  EXPECT_TRUE(s.mfu[4].recompute);  // the run's own recompute
  EXPECT_DOUBLE_EQ(s.mfu[4].achieved_tflops, 1.5);
  EXPECT_FALSE(s.mfu[0].mfu.has_value());
  EXPECT_EQ(s.loss_window, 1);
}

// What the reader holds a report's summary to: the run's own summary, recomputed from the
// report's steps alone (a resumed job of 2 devices with a warm-up of 1 and both peaks).
TEST(SummaryOfSteps, IsTheSummaryTheRunComputed) {
  report::Report r;
  r.world_size = 2;
  r.spec = nlohmann::ordered_json::parse(R"({"train": {"timing_warmup_steps": 1}})");
  std::vector<model::StepFlops> flops;
  for (int64_t i = 1; i <= 6; ++i) {
    r.steps.push_back(step(i, 1.0 + 0.25 * double(i % 3), 0.125, 90 + i, 128, 3.0 - 0.25 * i));
    r.steps.back().segment = i <= 3 ? 1 : 2;
    r.steps.back().model_flops = 1e12 * double(i);
    flops.push_back({1e12 * double(i), 1.5e12 * double(i), 2e12 * double(i), 3e12 * double(i),
                     1.25e12 * double(i)});
  }
  SummaryOptions o;
  o.warmup_steps = 1;
  o.loss_window = 4;
  o.peak_tflops = 10.0;
  o.gemm_peak_tflops = 8.0;
  o.recompute = true;
  o.devices = 2;
  r.summary = summarize_run(r.steps, flops, o);
  const report::Summary s = summary_of_steps(r);
  EXPECT_EQ(s.warmup_steps_excluded, 2);
  EXPECT_EQ(s.measured_steps, 4);
  EXPECT_EQ(s.step_seconds.count, 4);
  EXPECT_EQ(s.step_seconds.mean, r.summary.step_seconds.mean);
  EXPECT_EQ(s.step_seconds.p90, r.summary.step_seconds.p90);
  EXPECT_EQ(s.step_seconds.stddev, r.summary.step_seconds.stddev);
  EXPECT_EQ(s.tokens_per_second_real, r.summary.tokens_per_second_real);
  EXPECT_EQ(s.tokens_per_second_padded, r.summary.tokens_per_second_padded);
  EXPECT_EQ(s.padding_fraction, r.summary.padding_fraction);
  EXPECT_EQ(s.data_wait_fraction, r.summary.data_wait_fraction);
  ASSERT_EQ(s.mfu.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(s.mfu[i].flops_per_step, r.summary.mfu[i].flops_per_step) << i;
    EXPECT_DOUBLE_EQ(s.mfu[i].achieved_tflops, r.summary.mfu[i].achieved_tflops) << i;
    EXPECT_DOUBLE_EQ(*s.mfu[i].mfu, *r.summary.mfu[i].mfu) << i;
    EXPECT_DOUBLE_EQ(*s.mfu[i].mfu_gemm, *r.summary.mfu[i].mfu_gemm) << i;
  }
  // Steps 2, 3, 5 and 6: 16e12 FLOP of the frozen-base count over 5 s.
  EXPECT_EQ(s.mfu[0].flops_per_step, 4e12);
  EXPECT_DOUBLE_EQ(s.mfu[0].achieved_tflops, 16e12 / 5.0 / 1e12);
  EXPECT_EQ(s.final_loss, 1.5);
  EXPECT_EQ(s.loss_window, 4);
  EXPECT_EQ(s.mean_last_losses, (2.25 + 2.0 + 1.75 + 1.5) / 4.0);
}

TEST(WarmupMask, AReportLeavesOutTheWarmupOfEachSegmentAsItsSummaryDid) {
  report::Report r;
  r.spec = nlohmann::ordered_json::parse(R"({"train": {"timing_warmup_steps": 2}})");
  for (int64_t i = 1; i <= 7; ++i) {
    report::StepRecord s;
    s.step = i;
    s.segment = i <= 4 ? 1 : 2;  // resumed after step 4
    r.steps.push_back(s);
  }
  r.summary.warmup_steps_excluded = 4;
  EXPECT_EQ(warmup_mask(r), (std::vector<bool>{true, true, false, false, true, true, false}));
  // A summary that disagrees with its spec (edited by hand): its count, from the start.
  r.summary.warmup_steps_excluded = 3;
  EXPECT_EQ(warmup_mask(r), (std::vector<bool>{true, true, true, false, false, false, false}));
  r.summary.warmup_steps_excluded = 0;
  EXPECT_EQ(warmup_mask(r), std::vector<bool>(7, false));
}

}  // namespace
}  // namespace ftbench::metrics
