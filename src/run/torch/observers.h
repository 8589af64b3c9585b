// What watches a run without steering it (torchtitan's and Lightning's callbacks): the progress
// line with its live cost, the MLPerf-style event log, the energy meter and the testing aid that
// makes a rank fail. Each is told of the run's events through RunObserver's hooks, in the order
// the observers were added; none of them changes what is trained. The segment journal, which
// also watches the phases and steps, is run_journal.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device/torch/backend.h"
#include "device/torch/energy_meter.h"
#include "report/measurements.h"
#include "run/mllog.h"
#include "run/progress.h"
#include "run/torch/run_context.h"

namespace ftbench::run::detail {

// How a run ended, for on_finish.
enum class RunEnd {
  kCompleted,  // every step made (the exports may still fail: on_finish then comes again)
  kStopped,    // a stop signal or --stop-after-steps
  kFailed,     // an error
};

class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // A phase ended.
  virtual void on_phase(const report::TimedPhase& /*phase*/) {}
  // Set-up is done (the model's weights are in): the timed run begins on `platform` ("1xNVIDIA
  // H100 80GB HBM3").
  virtual void on_run_start(double /*now*/, const std::string& /*platform*/) {}
  // The step loop begins with `first_step` (1, or where a resumed run goes on).
  virtual void on_training_start(double /*now*/, int64_t /*first_step*/) {}
  // After each optimizer step, outside its timed wall time.
  virtual void on_step(const train::StepMeasurement& /*step*/, double /*now*/) {}
  // A validation pass after a step, from `start` to `end` on the process clock.
  virtual void on_evaluation(const report::EvaluationPass& /*evaluation*/, double /*start*/,
                             double /*end*/) {}
  // The step loop ended: after the last step, or at a stop after its save.
  virtual void on_training_end(double /*now*/) {}
  // The run ended; `last_step` is the last step this process made (first_step - 1: none).
  virtual void on_finish(RunEnd /*end*/, double /*now*/, int64_t /*last_step*/) {}
};

// The observers of one run, told of each event in the order they were added. Holds the ones it
// is given and refers to the ones added by pointer (which must outlive it).
class Observers {
 public:
  void add(std::unique_ptr<RunObserver> observer);
  void add(RunObserver* observer) { all_.push_back(observer); }

  void on_phase(const report::TimedPhase& phase);
  void on_run_start(double now, const std::string& platform);
  void on_training_start(double now, int64_t first_step);
  void on_step(const train::StepMeasurement& step, double now);
  void on_evaluation(const report::EvaluationPass& evaluation, double start, double end);
  void on_training_end(double now);
  // Every observer is told, whatever one of them throws; then the first error is thrown.
  void on_finish(RunEnd end, double now, int64_t last_step);

 private:
  std::vector<std::unique_ptr<RunObserver>> owned_;
  std::vector<RunObserver*> all_;
};

// The progress line (run/progress.h) and, with a price, the dollars so far and projected.
class ProgressObserver : public RunObserver {
 public:
  ProgressObserver(const RunContext& context, const report::Measured& measured);
  void on_training_start(double now, int64_t first_step) override;
  void on_step(const train::StepMeasurement& step, double now) override;
  void on_training_end(double now) override;

 private:
  const RunContext& context_;
  const report::Measured& measured_;
  std::optional<Progress> progress_;
  double training_start_ = 0.0;
};

// The MLPerf-style event log (output.mllog, run/mllog.h), rank 0's.
class EventLogObserver : public RunObserver {
 public:
  // Opens the log (continued by a resumed run, replaced by one that continues a stop before the
  // first step) and writes its preamble and the job's hyperparameters.
  // `first_step`: this process's (1, or where a resumed run goes on).
  EventLogObserver(const RunContext& context, const report::Measured& measured, bool replace,
                   bool resumed, int64_t first_step);
  void on_run_start(double now, const std::string& platform) override;
  void on_training_start(double now, int64_t first_step) override;
  void on_step(const train::StepMeasurement& step, double now) override;
  void on_evaluation(const report::EvaluationPass& evaluation, double start, double end) override;
  // Completed: run_stop "success". Stopped after a step of this process (a checkpoint saved):
  // the block closed and the log left for the resume to continue. Otherwise run_stop
  // "aborted".
  void on_finish(RunEnd end, double now, int64_t last_step) override;

 private:
  int64_t epoch_of(int64_t step) const;

  const RunContext& context_;
  const report::Measured& measured_;
  int64_t first_step_;
  MlLog log_;
};

// The device's energy over the step loop (device/torch/energy_meter.h), its readings into the
// measurements (the report's `energy`); a run that ends before or inside the loop records what
// the meter has (or why it has none).
class EnergyObserver : public RunObserver {
 public:
  EnergyObserver(const RunContext& context, RunMeasurements& measured,
                 const std::unique_ptr<device::Backend>& backend);
  void on_training_start(double now, int64_t first_step) override;
  void on_training_end(double now) override;
  void on_finish(RunEnd end, double now, int64_t last_step) override;

 private:
  void record_energy();

  const RunContext& context_;
  RunMeasurements& measured_;
  const std::unique_ptr<device::Backend>& backend_;  // the run's, once it is up
  device::EnergyMeter meter_;
};

// Testing aid (FTBENCH_INJECT_RANK_FAULT, train/dist/rank_fault.h): this rank exits, hangs or gets
// SIGTERM after the step its rule names.
class RankFaultObserver : public RunObserver {
 public:
  explicit RankFaultObserver(const RunContext& context) : context_(context) {}
  void on_step(const train::StepMeasurement& step, double now) override;

 private:
  const RunContext& context_;
};

}  // namespace ftbench::run::detail
