// Spot risk: exact values for whole-number inputs (docs/cost-and-compare.md, "Spot risk").
#include "ftbench/cost/spot_risk.h"

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

TEST(SpotRisk, WithCheckpointsEachReclaimLosesHalfAnIntervalAndTheRestart) {
  SpotInputs in = hour_at_half();
  in.checkpoint_interval_seconds = 1800.0;
  const SpotRisk r = spot_risk(in);
  EXPECT_DOUBLE_EQ(r.mean_seconds_between, 7200.0);
  EXPECT_DOUBLE_EQ(r.lost_per_interruption_seconds, 1200.0);  // 900 + 300
  // E = 3600 / (1 - 1200 / 7200) = 4320 s; 4320 / 7200 = 0.6 reclaims expected.
  ASSERT_TRUE(r.expected_seconds.has_value());
  EXPECT_DOUBLE_EQ(*r.expected_seconds, 4320.0);
  EXPECT_DOUBLE_EQ(*r.expected_interruptions, 0.6);
  EXPECT_DOUBLE_EQ(r.p_at_least_one, 0.3934693402873666);  // 1 - exp(-0.5)
  // sqrt(2 * 60 * 7200) = sqrt(864000)
  ASSERT_TRUE(r.optimal_interval_seconds.has_value());
  EXPECT_DOUBLE_EQ(*r.optimal_interval_seconds, 929.51600308978);
}

TEST(SpotRisk, WithoutCheckpointsAReclaimRestartsTheJob) {
  const SpotRisk r = spot_risk(hour_at_half());
  // (7200 + 300) * (exp(0.5) - 1) s, exp(0.5) - 1 reclaims, each losing (E - W) / N on average.
  ASSERT_TRUE(r.expected_seconds.has_value());
  EXPECT_DOUBLE_EQ(*r.expected_seconds, 4865.409530250961);
  EXPECT_DOUBLE_EQ(*r.expected_interruptions, 0.6487212707001282);
  EXPECT_DOUBLE_EQ(r.lost_per_interruption_seconds, 1950.6213028675263);
  EXPECT_DOUBLE_EQ(r.p_at_least_one, 0.3934693402873666);
}

TEST(SpotRisk, AJobThatLosesAsMuchAsItGainsIsNotExpectedToFinish) {
  SpotInputs in = hour_at_half();
  in.checkpoint_interval_seconds = 13800.0;  // 6900 + 300 = 7200 s lost a reclaim, one each 7200 s
  const SpotRisk r = spot_risk(in);
  EXPECT_FALSE(r.expected_seconds.has_value());
  EXPECT_FALSE(r.expected_interruptions.has_value());
  EXPECT_DOUBLE_EQ(r.lost_per_interruption_seconds, 7200.0);
  // Without a save time there is no optimal interval; no work, no risk.
  in.save_seconds = 0.0;
  in.work_seconds = 0.0;
  in.checkpoint_interval_seconds = 600.0;
  const SpotRisk none = spot_risk(in);
  EXPECT_FALSE(none.optimal_interval_seconds.has_value());
  EXPECT_DOUBLE_EQ(none.p_at_least_one, 0.0);
  EXPECT_DOUBLE_EQ(*none.expected_seconds, 0.0);
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

}  // namespace
}  // namespace ftbench::cost
