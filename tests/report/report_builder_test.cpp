// The run's report builder without a model: what the report holds after an assembly, for a fresh
// run and a resumed one, from made-up steps and readings.
#include "report/report_builder.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "device/process_clock.h"
#include "report/records.h"
#include "report/report.h"

namespace ftbench::report {
namespace {

using std::chrono::steady_clock;

// 2026-11-29T22:34:05Z.
constexpr double kStartEpoch = 1795991645.0;

train::StepMeasurement measured(int64_t n, double seconds, double loss) {
  train::StepMeasurement s;
  s.step = n;
  s.epoch = 0;
  s.wall_seconds = seconds;
  s.real_tokens = 1000;
  s.padded_tokens = 1024;
  s.loss_tokens = 900;
  s.loss = loss;
  s.lr = 1e-4;
  s.grad_norm = 1.0;
  s.model_flops = 6e12;
  return s;
}

train::TrainResult two_steps() {
  train::TrainResult r;
  r.steps = {measured(4, 2.0, 1.5), measured(5, 4.0, 1.25)};
  r.flops = {{1e12, 1e12, 2e12, 2e12}, {1e12, 1e12, 2e12, 2e12}};
  r.micro_batch_size = 2;
  r.grad_accum_steps = 4;
  r.fallbacks = {{4, 4, 2, 2, 4, 0.5, "out of memory"}};
  return r;
}

DeviceSections readings() {
  DeviceSections d;
  d.environment.device.name = "NVIDIA H200";
  d.memory.peak_rss_bytes = 123;
  d.intra_op_threads = 16;
  return d;
}

EarlierSegments three_earlier_steps() {
  EarlierSegments e;
  report::Segment first;
  first.index = 1;
  first.status = "interrupted";
  first.first_step = 1;
  first.last_step = 3;
  first.run_seconds = 50.0;
  e.segments = {first};
  for (int64_t n = 1; n <= 3; ++n) {
    e.steps.push_back(step_record(measured(n, 3.0, 2.0), 1));
    e.flops.push_back({5e11, 5e11, 1e12, 1e12});
  }
  e.resumed_from = "checkpoints/r/step-00000003";
  return e;
}

TEST(ReportBuilder, AFreshRunIsSegmentOneWithItsOwnSteps) {
  const auto start = steady_clock::now();
  const device::ProcessClock clock = device::ProcessClock::started_at(start, kStartEpoch);
  ReportBuilder builder(clock);
  builder.measured().start.started_at_utc = "2026-11-29T22:34:05Z";
  builder.measured().start.t0_before_process_seconds = 30.0;
  EXPECT_EQ(builder.segment_index(), 1);
  EXPECT_EQ(builder.time_to_first_step_seconds(), 0.0);
  builder.first_step_ended(12.5);
  EXPECT_EQ(builder.time_to_first_step_seconds(), 42.5);

  metrics::SummaryOptions summary;
  const double before = clock.now();
  const std::vector<model::StepFlops> flops =
      builder.assemble("completed", two_steps(), summary, readings());
  const double after = clock.now();
  const report::Report& r = builder.report();
  EXPECT_EQ(r.status, "completed");
  EXPECT_EQ(r.time_to_first_step_seconds, 42.5);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0].step, 4);
  EXPECT_EQ(r.steps[0].segment, 1);
  EXPECT_EQ(r.steps[1].segment, 1);
  EXPECT_EQ(flops.size(), 2u);
  ASSERT_TRUE(r.batching.has_value());
  EXPECT_EQ(r.batching->micro_batch_size, 2);
  EXPECT_EQ(r.batching->grad_accum_steps, 4);
  ASSERT_EQ(r.batching->fallbacks.size(), 1u);
  EXPECT_EQ(r.summary.measured_steps, 2);
  EXPECT_EQ(r.summary.step_seconds.mean, 3.0);
  EXPECT_EQ(r.summary.final_loss, 1.25);
  EXPECT_EQ(r.environment.device.name, "NVIDIA H200");
  EXPECT_EQ(r.memory.peak_rss_bytes, 123);

  ASSERT_EQ(r.segments.size(), 1u);
  const report::Segment& g = r.segments[0];
  EXPECT_EQ(g.index, 1);
  EXPECT_EQ(g.status, "completed");
  EXPECT_EQ(g.started_at_utc, "2026-11-29T22:34:05Z");
  EXPECT_EQ(g.first_step, 4);
  EXPECT_EQ(g.last_step, 5);
  EXPECT_EQ(g.time_to_first_step_seconds, 42.5);
  EXPECT_EQ(g.resumed_from, "");
  EXPECT_EQ(g.intra_op_threads, 16);
  // From t0 to the assembly, read on the process clock while it ran.
  EXPECT_GE(g.run_seconds, 30.0 + before);
  EXPECT_LE(g.run_seconds, 30.0 + after);
  EXPECT_EQ(g.finished_at_utc.substr(0, 17), "2026-11-29T22:34:");
}

TEST(ReportBuilder, AResumedRunFollowsTheEarlierSegments) {
  const device::ProcessClock clock =
      device::ProcessClock::started_at(steady_clock::now(), kStartEpoch);
  ReportBuilder builder(clock);
  builder.resume(three_earlier_steps());
  EXPECT_EQ(builder.segment_index(), 2);
  // The earlier segments are in the report before any assembly (the journal's first write).
  ASSERT_EQ(builder.report().segments.size(), 1u);
  EXPECT_EQ(builder.report().segments[0].status, "interrupted");

  const train::TrainResult result = two_steps();
  const std::vector<report::StepRecord> own = builder.segment_steps(result);
  ASSERT_EQ(own.size(), 2u);
  EXPECT_EQ(own[0].segment, 2);
  EXPECT_EQ(own[1].segment, 2);

  const std::vector<model::StepFlops> flops =
      builder.assemble("interrupted", result, metrics::SummaryOptions{}, readings());
  const report::Report& r = builder.report();
  ASSERT_EQ(r.steps.size(), 5u);
  const std::vector<int64_t> segments = {r.steps[0].segment, r.steps[2].segment, r.steps[3].segment,
                                         r.steps[4].segment};
  EXPECT_EQ(segments, (std::vector<int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(r.steps[3].step, 4);
  ASSERT_EQ(flops.size(), 5u);
  EXPECT_EQ(flops[0].six_n, 1e12);
  EXPECT_EQ(flops[4].six_n, 2e12);
  // Timing figures over every step, both segments (none is a warm-up here).
  EXPECT_EQ(r.summary.measured_steps, 5);
  EXPECT_EQ(r.summary.step_seconds.mean, 3.0);

  ASSERT_EQ(r.segments.size(), 2u);
  EXPECT_EQ(r.segments[0].run_seconds, 50.0);
  EXPECT_EQ(r.segments[1].index, 2);
  EXPECT_EQ(r.segments[1].status, "interrupted");
  EXPECT_EQ(r.segments[1].resumed_from, "checkpoints/r/step-00000003");
  EXPECT_EQ(r.segments[1].first_step, 4);
  // No step ended in this process yet: no time to first step.
  EXPECT_EQ(r.segments[1].time_to_first_step_seconds, 0.0);

  // The journal: the earlier segments, then the one given.
  report::Segment now = builder.segment("unfinished", result, std::nullopt);
  EXPECT_FALSE(now.intra_op_threads.has_value());
  const std::vector<report::Segment> all = builder.all_segments(now);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].index, 1);
  EXPECT_EQ(all[1].status, "unfinished");
}

TEST(ReportBuilder, AssemblingAgainReplacesTheSegmentsSteps) {
  const device::ProcessClock clock =
      device::ProcessClock::started_at(steady_clock::now(), kStartEpoch);
  ReportBuilder builder(clock);
  train::TrainResult result = two_steps();
  builder.assemble("unfinished", result, metrics::SummaryOptions{}, readings());
  result.steps.push_back(measured(6, 6.0, 1.0));
  result.flops.push_back({1e12, 1e12, 2e12, 2e12});
  builder.assemble("completed", result, metrics::SummaryOptions{}, readings());
  const report::Report& r = builder.report();
  EXPECT_EQ(r.steps.size(), 3u);
  ASSERT_EQ(r.segments.size(), 1u);
  EXPECT_EQ(r.segments[0].last_step, 6);
  EXPECT_EQ(r.segments[0].status, "completed");
  EXPECT_EQ(r.summary.final_loss, 1.0);
}

// What the phases measured reaches the report at each assembly, after what the earlier segments
// recorded; the energy covers this process's steps; the ranks are summarised against the job's
// throughput.
TEST(ReportBuilder, TheMeasurementsAreMappedIntoTheReportAtEachAssembly) {
  const device::ProcessClock clock =
      device::ProcessClock::started_at(steady_clock::now(), kStartEpoch);
  ReportBuilder builder(clock);
  EarlierSegments earlier = three_earlier_steps();
  earlier.evaluations = {{3, 2.5, 100, 1, 0.1}};
  earlier.checkpoints = {{3, 1, "signal", "checkpoints/r/step-00000003", 1000, 0.5}};
  builder.resume(std::move(earlier));

  Measured& m = builder.measured();
  m.start.run_name = "tiny";
  m.start.working_directory = "/work";
  m.start.world_size = 2;
  m.start.started_at_utc = "2026-11-29T22:34:05Z";
  m.start.spec_path = "configs/ci-tiny.yaml";
  m.start.spec = {{"model", {{"preset", "tiny"}}}};
  m.start.spec_fingerprint = "f00d";
  m.start.t0_source = "--t0";
  m.start.t0_before_process_seconds = 12.0;
  m.parameters.base = 1000;
  m.parameters.lora = 24;
  m.derived.effective_batch = 8;
  m.derived.micro_batches_per_epoch = 12;
  m.derived.steps_per_epoch = 3;
  m.derived.total_steps = 6;
  m.derived.max_tokens_per_step = 2048;
  m.phases = {{"launch", 0.0, 1.5}, {"training", 1.5, 6.0, device::MemoryReading{}}};
  m.evaluations = {{5, 1.5, 100, 1, 0.2}};
  m.checkpoints = {{5, 2, "every_steps", "checkpoints/r/step-00000005", 1000, 0.25}};
  m.exports = {{"peft_adapter", "out/adapter", 14, 24'576, 0.0125}};
  m.data = DataRead{};
  m.data->train = {"synthetic(seed=1, n=24)", {24, 2400, 2000, "da7a"}};
  m.weights = WeightsRead{};
  m.execution = ExecutionChoices{"math", "none", std::nullopt, false, true};
  m.memory_prediction = MemoryPrediction{4096, "ftbench plan: math attention"};
  device::EnergyReadings energy;
  energy.reason = "backend cpu";
  m.energy = energy;
  m.gemm = MeasuredGemm{"gemm.json", "cpu", "cpu", "2.6.0", "2026-11-29T22:00:00Z", {}};
  m.error = "";
  Distributed d;
  d.launch = "torchrun";
  d.backend = "gloo";
  RankRecord rank;
  rank.rank = 0;
  rank.steps = {{2.0, 0.1}, {4.0, 0.2}};
  d.ranks = {rank};
  builder.distributed(d);

  builder.assemble("completed", two_steps(), metrics::SummaryOptions{}, readings());
  const Report& r = builder.report();
  EXPECT_EQ(r.run_name, "tiny");
  EXPECT_EQ(r.working_directory, "/work");
  EXPECT_EQ(r.world_size, 2);
  EXPECT_EQ(r.started_at_utc, "2026-11-29T22:34:05Z");
  EXPECT_EQ(r.spec_path, "configs/ci-tiny.yaml");
  EXPECT_EQ(r.spec["model"]["preset"], "tiny");
  EXPECT_EQ(r.spec_fingerprint, "f00d");
  EXPECT_EQ(r.t0_source, "--t0");
  EXPECT_EQ(r.t0_before_process_seconds, 12.0);
  EXPECT_EQ(r.parameters.base, 1000);
  EXPECT_EQ(r.parameters.trainable, 24);
  EXPECT_EQ(r.parameters.total, 1024);
  EXPECT_EQ(r.derived.effective_batch, 8);
  EXPECT_EQ(r.derived.micro_batches_per_epoch, 12);
  EXPECT_EQ(r.derived.steps_per_epoch, 3);
  EXPECT_EQ(r.derived.total_steps, 6);
  EXPECT_EQ(r.derived.max_tokens_per_step, 2048);
  ASSERT_EQ(r.phases.size(), 2u);
  EXPECT_FALSE(r.phases[0].memory.has_value());
  EXPECT_TRUE(r.phases[1].memory.has_value());
  // The earlier segment's evaluation and checkpoint first.
  ASSERT_EQ(r.evaluations.size(), 2u);
  EXPECT_EQ(r.evaluations[0].after_step, 3);
  EXPECT_EQ(r.evaluations[1].after_step, 5);
  ASSERT_EQ(r.checkpoints.size(), 2u);
  EXPECT_EQ(r.checkpoints[0].reason, "signal");
  EXPECT_EQ(r.checkpoints[1].segment, 2);
  ASSERT_EQ(r.exports.size(), 1u);
  EXPECT_EQ(r.exports[0].bytes, 24'576);
  ASSERT_TRUE(r.data.has_value());
  EXPECT_EQ(r.data->fingerprint, "da7a");
  ASSERT_TRUE(r.weights.has_value());
  EXPECT_EQ(r.weights->source, "random");
  ASSERT_TRUE(r.execution.has_value());
  EXPECT_EQ(r.execution->attention_kernel, "math");
  // The prediction beside the device's memory.
  EXPECT_EQ(r.memory.peak_rss_bytes, 123);
  EXPECT_EQ(r.memory.predicted_peak_bytes, 4096);
  EXPECT_EQ(r.memory.prediction_basis, "ftbench plan: math attention");
  // The energy of this process's two steps (segment 2), not the earlier segment's three.
  ASSERT_TRUE(r.energy.has_value());
  EXPECT_EQ(r.energy->reason, "backend cpu");
  EXPECT_EQ(r.energy->segment, 2);
  EXPECT_EQ(r.energy->steps, 2);
  ASSERT_TRUE(r.gemm.has_value());
  EXPECT_EQ(r.gemm->source, "gemm.json");
  ASSERT_TRUE(r.distributed.has_value());
  EXPECT_EQ(r.distributed->launch, "torchrun");
  ASSERT_EQ(r.distributed->ranks.size(), 1u);
  EXPECT_FALSE(r.profile.has_value());
  EXPECT_EQ(r.error, "");

  // A save recorded while its manifest is written: in the JSON the checkpoint carries.
  m.checkpoints.push_back({6, 2, "every_steps", "checkpoints/r/step-00000006", 1000, 0.25});
  const nlohmann::ordered_json now = builder.report_json_now();
  ASSERT_EQ(now["checkpoints"].size(), 3u);
  EXPECT_EQ(now["checkpoints"][2]["step"], 6);
  // The report itself stays as the last assembly made it: the save's record is taken back
  // (its bytes and time are measured again after the manifest) before the next assembly.
  m.checkpoints.pop_back();
  EXPECT_EQ(builder.report().checkpoints.size(), 2u);
}

// Just before the write: the phases and the memory up to now with the prediction, and the time
// it finishes; the steps, the summary and the segment records stay as the last assembly made
// them (the write's own phase is measured on the real file).
TEST(ReportBuilder, BeforeTheWriteThePhasesAndMemoryComeUpToDateAndTheRestStays) {
  const device::ProcessClock clock =
      device::ProcessClock::started_at(steady_clock::now(), kStartEpoch);
  ReportBuilder builder(clock);
  Measured& m = builder.measured();
  m.phases = {{"launch", 0.0, 1.0}, {"training", 1.0, 5.0}};
  m.memory_prediction = MemoryPrediction{4096, "ftbench plan"};
  builder.assemble("completed", two_steps(), metrics::SummaryOptions{}, readings());
  const report::Segment segment = builder.report().segments.at(0);
  const double mean = builder.report().summary.step_seconds.mean;

  m.phases.push_back({"summarize", 6.0, 0.5});
  report::Memory memory;
  memory.peak_rss_bytes = 456;
  builder.before_write(memory);
  const Report& r = builder.report();
  ASSERT_EQ(r.phases.size(), 3u);
  EXPECT_EQ(r.phases[2].name, "summarize");
  EXPECT_EQ(r.memory.peak_rss_bytes, 456);
  EXPECT_EQ(r.memory.predicted_peak_bytes, 4096);
  EXPECT_EQ(r.memory.prediction_basis, "ftbench plan");
  EXPECT_EQ(r.finished_at_utc.substr(0, 17), "2026-11-29T22:34:");
  ASSERT_EQ(r.segments.size(), 1u);
  EXPECT_EQ(r.segments[0].finished_at_utc, segment.finished_at_utc);
  EXPECT_EQ(r.segments[0].run_seconds, segment.run_seconds);
  EXPECT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.summary.step_seconds.mean, mean);
  EXPECT_EQ(r.environment.device.name, "NVIDIA H200");
}

}  // namespace
}  // namespace ftbench::report
