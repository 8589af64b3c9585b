// Spot risk: exact values for whole-number inputs (docs/cost-and-compare.md, "Spot risk").
#include "economics/cost/spot_risk.h"

#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

namespace ftbench::cost {
namespace {

// One hour of work at one reclaim every two hours (0.5 per hour).
SpotInputs hour_at_half() {
  SpotInputs in;
  in.work_seconds = 3600.0;
  in.preemptions_per_hour = 0.5;
  in.save_seconds = 60.0;
  in.restart_seconds = 300.0;
  return in;
}

TEST(SpotRisk, WithCheckpointsEachIntervalMustRunThroughOnceAfterItsRestart) {
  SpotInputs in = hour_at_half();
  in.checkpoint_interval_seconds = 1800.0;
  const SpotRisk r = spot_risk(in);
  EXPECT_DOUBLE_EQ(r.mean_seconds_between, 7200.0);
  EXPECT_DOUBLE_EQ(r.segment_seconds, 1800.0);
  EXPECT_DOUBLE_EQ(r.restart_counted_seconds, 300.0);
  // Two intervals, each (7200 + 300)(e^(1800/7200) - 1) s, with e^0.25 - 1 reclaims each.
  ASSERT_TRUE(r.expected_seconds.has_value());
  EXPECT_DOUBLE_EQ(*r.expected_seconds, 4260.3812503161225);
  EXPECT_DOUBLE_EQ(*r.expected_interruptions, 0.568050833375483);
  EXPECT_DOUBLE_EQ(*r.lost_per_interruption_seconds, 1162.5390044619633);
  EXPECT_DOUBLE_EQ(r.p_at_least_one, 0.3934693402873666);  // 1 - exp(-0.5)
  // sqrt(2 * 60 * 7200) = sqrt(864000)
  ASSERT_TRUE(r.optimal_interval_seconds.has_value());
  EXPECT_DOUBLE_EQ(*r.optimal_interval_seconds, 929.51600308978);
}

TEST(SpotRisk, WithoutCheckpointsAReclaimStartsTheJobAgainItsSetUpIncluded) {
  const SpotRisk r = spot_risk(hour_at_half());
  // 7200 (e^0.5 - 1) s: the restart is the job's own set-up, in the work run again.
  EXPECT_DOUBLE_EQ(r.segment_seconds, 3600.0);
  EXPECT_DOUBLE_EQ(r.restart_counted_seconds, 0.0);
  ASSERT_TRUE(r.expected_seconds.has_value());
  EXPECT_DOUBLE_EQ(*r.expected_seconds, 4670.793149040923);
  EXPECT_DOUBLE_EQ(*r.expected_interruptions, 0.6487212707001282);
  EXPECT_DOUBLE_EQ(*r.lost_per_interruption_seconds, 1650.6213028675263);
  // An interval as long as the work or longer: no checkpoint inside the job, the same figures.
  SpotInputs long_interval = hour_at_half();
  long_interval.checkpoint_interval_seconds = 13800.0;
  const SpotRisk same = spot_risk(long_interval);
  EXPECT_DOUBLE_EQ(same.segment_seconds, 3600.0);
  EXPECT_DOUBLE_EQ(*same.expected_seconds, 4670.793149040923);
}

TEST(SpotRisk, NoWorkNoRiskAndAnOverflowHasNoFigure) {
  SpotInputs in = hour_at_half();
  in.work_seconds = 0.0;
  in.save_seconds = 0.0;
  const SpotRisk none = spot_risk(in);
  EXPECT_FALSE(none.optimal_interval_seconds.has_value());
  EXPECT_DOUBLE_EQ(none.p_at_least_one, 0.0);
  EXPECT_DOUBLE_EQ(*none.expected_seconds, 0.0);
  EXPECT_DOUBLE_EQ(*none.expected_interruptions, 0.0);
  // An hour without checkpoints at a reclaim a second: e^3600 is beyond a double.
  in = hour_at_half();
  in.preemptions_per_hour = 3600.0;
  const SpotRisk never = spot_risk(in);
  EXPECT_FALSE(never.expected_seconds.has_value());
  EXPECT_FALSE(never.expected_interruptions.has_value());
  EXPECT_FALSE(never.lost_per_interruption_seconds.has_value());
  EXPECT_DOUBLE_EQ(never.p_at_least_one, 1.0);
}

TEST(SpotRisk, BadInputsNameWhatIsWrong) {
  auto error = [](SpotInputs in) {
    try {
      spot_risk(in);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  SpotInputs in = hour_at_half();
  in.preemptions_per_hour = 0.0;
  EXPECT_EQ(error(in).rfind("preemptions per hour: expected a finite number > 0", 0), 0u);
  in = hour_at_half();
  in.checkpoint_interval_seconds = 0.0;
  EXPECT_EQ(error(in).rfind("checkpoint interval: expected a finite number > 0", 0), 0u);
  in = hour_at_half();
  in.restart_seconds = -1.0;
  EXPECT_EQ(error(in).rfind("restart seconds: expected a finite number >= 0", 0), 0u);
}

// A report of 100 steps over 300 s of training, 120 s to its first step.
report::Report measured(const nlohmann::ordered_json& checkpoint) {
  report::Report r;
  r.spec = {{"train", {{"checkpoint", checkpoint}}}};
  r.time_to_first_step_seconds = 120.0;
  return r;
}

RunTimes times_of_100_steps() {
  RunTimes t;
  t.steps = 100;
  t.training_seconds = 300.0;
  t.time_to_first_step_seconds = 120.0;
  return t;
}

TEST(SpotBasis, TheIntervalSaveAndRestartComeFromTheReport) {
  report::Report r = measured({{"every_minutes", 30.0}, {"every_steps", 0}});
  report::CheckpointSave a;
  a.seconds = 10.0;
  report::CheckpointSave b;
  b.seconds = 20.0;
  r.checkpoints = {a, b};
  RunTimes t = times_of_100_steps();
  t.run_seconds = 500.0;
  SpotBasis s = spot_basis(r, t, std::nullopt, 2.0);
  EXPECT_DOUBLE_EQ(s.inputs.work_seconds, 500.0);
  EXPECT_EQ(s.work_from, "the run's time");
  EXPECT_DOUBLE_EQ(s.inputs.preemptions_per_hour, 2.0);
  EXPECT_DOUBLE_EQ(*s.inputs.checkpoint_interval_seconds, 1800.0);
  EXPECT_EQ(s.interval_from, "train.checkpoint.every_minutes: 30");
  EXPECT_DOUBLE_EQ(s.inputs.save_seconds, 15.0);
  EXPECT_EQ(s.save_from, "mean of the run's 2 saves");
  EXPECT_DOUBLE_EQ(s.inputs.restart_seconds, 120.0);
  EXPECT_EQ(s.restart_from, "the run's time to first step; a resume's load not measured");

  // every_steps: 50 steps of the run's mean 3 s; a resumed segment's set-up is the restart.
  r = measured({{"every_minutes", 0.0}, {"every_steps", 50}});
  report::Segment first;
  first.index = 1;
  first.time_to_first_step_seconds = 120.0;
  report::Segment resumed;
  resumed.index = 2;
  resumed.resumed_from = "ck/step-00000050";
  resumed.time_to_first_step_seconds = 95.0;
  r.segments = {first, resumed};
  s = spot_basis(r, t, std::nullopt, 2.0);
  // The resumed segment's set-up was a real interruption's restart, not work.
  EXPECT_DOUBLE_EQ(s.inputs.work_seconds, 405.0);
  EXPECT_EQ(s.work_from, "the run's time less the set-up of its 1 resumed segment");
  EXPECT_DOUBLE_EQ(*s.inputs.checkpoint_interval_seconds, 150.0);
  EXPECT_EQ(s.interval_from, "train.checkpoint.every_steps: 50 x the mean step, 3.0 s");
  EXPECT_DOUBLE_EQ(s.inputs.save_seconds, 0.0);
  EXPECT_EQ(s.save_from, "no save measured");
  EXPECT_DOUBLE_EQ(s.inputs.restart_seconds, 95.0);
  EXPECT_EQ(s.restart_from, "segment 2's time to first step (a resume, its load in)");

  // Neither: no interval.
  s = spot_basis(measured({{"every_minutes", 0.0}, {"every_steps", 0}}), t, 3600.0, 2.0);
  EXPECT_DOUBLE_EQ(s.inputs.work_seconds, 3600.0);
  EXPECT_EQ(s.work_from, "the projected job's time");
  EXPECT_FALSE(s.inputs.checkpoint_interval_seconds.has_value());
  EXPECT_EQ(s.interval_from, "no checkpoints: a reclaim restarts the job");
}

}  // namespace
}  // namespace ftbench::cost
