#include "train/cadence.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace ftbench::train {
namespace {

spec::TrainSpec train_spec(int64_t eval_every, int64_t save_every, double save_minutes) {
  spec::TrainSpec t;
  t.eval_every_steps = eval_every;
  t.checkpoint.every_steps = save_every;
  t.checkpoint.every_minutes = save_minutes;
  return t;
}

TEST(Evaluate, IsDueEveryNStepsAndAfterTheLast) {
  std::vector<int64_t> due;
  for (int64_t step = 1; step <= 7; ++step) {
    if (evaluation_due(step, 7, 2)) due.push_back(step);
  }
  EXPECT_EQ(due, (std::vector<int64_t>{2, 4, 6, 7}));
  due.clear();
  for (int64_t step = 1; step <= 7; ++step) {
    if (evaluation_due(step, 7, 0)) due.push_back(step);
  }
  EXPECT_EQ(due, (std::vector<int64_t>{7}));
}

TEST(Cadence, EvaluatesInTheLoopEveryNStepsButNotAfterTheLast) {
  const Cadence c(7, train_spec(2, 0, 0.0), /*validation=*/true, 0);
  std::vector<int64_t> due;
  for (int64_t step = 1; step <= 7; ++step) {
    if (c.evaluation_after(step)) due.push_back(step);
  }
  EXPECT_EQ(due, (std::vector<int64_t>{2, 4, 6}));
  EXPECT_TRUE(c.evaluation_after_training(7));
  EXPECT_FALSE(c.evaluation_after_training(0));  // a resumed run with no step left
}

TEST(Cadence, NeverEvaluatesWithoutValidationData) {
  const Cadence c(7, train_spec(2, 0, 0.0), /*validation=*/false, 0);
  for (int64_t step = 1; step <= 7; ++step) EXPECT_FALSE(c.evaluation_after(step)) << step;
  EXPECT_FALSE(c.evaluation_after_training(7));
}

TEST(Cadence, SavesEveryNStepsTheLastStepIncluded) {
  const Cadence c(6, train_spec(0, 3, 0.0), false, 0);
  std::vector<int64_t> saved;
  for (int64_t step = 1; step <= 6; ++step) {
    const std::optional<SaveReason> why = c.periodic_save(step, 1e9);
    if (why) {
      EXPECT_EQ(*why, SaveReason::kEverySteps);
      saved.push_back(step);
    }
  }
  EXPECT_EQ(saved, (std::vector<int64_t>{3, 6}));
}

TEST(Cadence, SavesByTimeOnceTheMinutesHavePassed) {
  const Cadence c(100, train_spec(0, 0, 1.5), false, 0);
  EXPECT_EQ(c.periodic_save(1, 89.999), std::nullopt);
  EXPECT_EQ(c.periodic_save(1, 90.0), SaveReason::kEveryMinutes);
  // Both due: the step count names the save.
  const Cadence both(100, train_spec(0, 5, 1.5), false, 0);
  EXPECT_EQ(both.periodic_save(10, 120.0), SaveReason::kEverySteps);
  EXPECT_EQ(both.periodic_save(11, 120.0), SaveReason::kEveryMinutes);
}

TEST(Cadence, NeverSavesWithoutAPolicy) {
  const Cadence c(10, train_spec(0, 0, 0.0), false, 0);
  for (int64_t step = 1; step <= 10; ++step) EXPECT_EQ(c.periodic_save(step, 1e9), std::nullopt);
}

TEST(Cadence, StopsOnASignalOrAtStopAfterStepsButNotAfterTheLastStep) {
  const Cadence c(10, train_spec(0, 0, 0.0), false, /*stop_after_steps=*/4);
  EXPECT_EQ(c.stop(3, 0), std::nullopt);
  EXPECT_EQ(c.stop(4, 0), SaveReason::kStopAfterSteps);
  EXPECT_EQ(c.stop(4, 15), SaveReason::kSignal);  // the signal names it
  EXPECT_EQ(c.stop(5, 0), std::nullopt);
  EXPECT_EQ(c.stop(9, 2), SaveReason::kSignal);
  EXPECT_EQ(c.stop(10, 15), std::nullopt);  // moot: the run is done
  const Cadence last(10, train_spec(0, 0, 0.0), false, /*stop_after_steps=*/10);
  EXPECT_EQ(last.stop(10, 0), std::nullopt);
}

TEST(Cadence, NamesTheReasonsAsTheReportDoes) {
  EXPECT_EQ(to_string(SaveReason::kEverySteps), "every_steps");
  EXPECT_EQ(to_string(SaveReason::kEveryMinutes), "every_minutes");
  EXPECT_EQ(to_string(SaveReason::kSignal), "signal");
  EXPECT_EQ(to_string(SaveReason::kStopAfterSteps), "stop_after_steps");
}

// One decision a step: the periodic save and the stop, each as its own rule gives it.
TEST(Cadence, DecidesAfterEachStepWhatTheRulesSay) {
  const Cadence c(6, train_spec(2, 3, 0.0), /*validation=*/true, /*stop_after_steps=*/4);
  const StepDecision first = c.decide(1, 0.0, 0);
  EXPECT_EQ(first.save, std::nullopt);
  EXPECT_EQ(first.stop, std::nullopt);
  const StepDecision third = c.decide(3, 0.0, 0);
  EXPECT_EQ(third.save, SaveReason::kEverySteps);
  EXPECT_EQ(third.stop, std::nullopt);
  const StepDecision fourth = c.decide(4, 0.0, 0);
  EXPECT_EQ(fourth.save, std::nullopt);
  EXPECT_EQ(fourth.stop, SaveReason::kStopAfterSteps);
  // A signal wins over --stop-after-steps; after the last step nothing stops.
  EXPECT_EQ(c.decide(2, 0.0, 15).stop, SaveReason::kSignal);
  const StepDecision last = c.decide(6, 0.0, 15);
  EXPECT_EQ(last.save, SaveReason::kEverySteps);
  EXPECT_EQ(last.stop, std::nullopt);
  // By the clock: every_minutes counts from the last save.
  const Cadence by_minutes(6, train_spec(0, 0, 1.0), false, 0);
  EXPECT_EQ(by_minutes.decide(2, 59.0, 0).save, std::nullopt);
  EXPECT_EQ(by_minutes.decide(2, 60.0, 0).save, SaveReason::kEveryMinutes);
}

}  // namespace
}  // namespace ftbench::train
