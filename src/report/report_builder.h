// The report of one `ftbench run` process as its phases feed it, built here (the report builder):
// the fixed part from the start, the parts each phase fills, and, at every assembly (a checkpoint's
// partial report, a failed or interrupted run's, the final one), the steps of the earlier segments
// and of this one, the summary over them and this process's segment record. Torch-free: what only
// the devices tell comes in as readings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "device/process_clock.h"
#include "report/metrics/run_summary.h"
#include "report/records.h"
#include "report/report.h"
#include "train/train_result.h"

namespace ftbench::report {

// What a resumed run carries over from the processes before it (resume_point.h, the segment
// journal); none for a fresh run.
struct EarlierSegments {
  std::vector<report::Segment> segments;
  std::vector<report::StepRecord> steps;  // numbered by their segments
  std::vector<model::StepFlops> flops;    // one a step, as the checkpoint kept them
  std::string resumed_from;               // the checkpoint folder
};

// The report's sections that only the run's devices fill, read by the run (it holds the backend)
// for an assembly.
struct DeviceSections {
  report::Environment environment;
  report::Memory memory;
  std::optional<int64_t> intra_op_threads;  // unset before the backend is up
};

class ReportBuilder {
 public:
  explicit ReportBuilder(const device::ProcessClock& clock) : clock_(clock) {}
  ReportBuilder(const ReportBuilder&) = delete;
  ReportBuilder& operator=(const ReportBuilder&) = delete;

  // What the phases fill: the fixed part, parameters, data, weights, evaluations, checkpoints,
  // exports, phases, energy.
  report::Report& report() { return rep_; }
  const report::Report& report() const { return rep_; }

  // A resumed run: the earlier segments join the report, and this process is the next one.
  void resume(EarlierSegments earlier);
  const std::vector<report::Segment>& earlier_segments() const { return earlier_.segments; }
  int64_t segment_index() const { return static_cast<int64_t>(earlier_.segments.size()) + 1; }

  // The end of this process's first optimizer step, in process seconds.
  void first_step_ended(double process_seconds) { first_step_end_ = process_seconds; }
  // From t0 (the report's t0_before_process_seconds before this process), 0 before that step.
  double time_to_first_step_seconds() const;

  // This process's steps as the report numbers them (its segment's index on each).
  std::vector<report::StepRecord> segment_steps(const train::TrainResult& result) const;
  // This process's record among the segments, as of now on the process clock.
  report::Segment segment(const std::string& status, const train::TrainResult& result,
                          std::optional<int64_t> intra_op_threads) const;
  // The earlier segments and `current` after them: what the segment journal holds.
  std::vector<report::Segment> all_segments(const report::Segment& current) const;

  // Everything measured so far into the report, with `status`: the earlier segments' steps and
  // this one's, the batching in effect, the summary over every step, the readings, and this
  // segment's record last. Returns every step's FLOPs, the earlier segments' first.
  std::vector<model::StepFlops> assemble(const std::string& status,
                                         const train::TrainResult& result,
                                         const metrics::SummaryOptions& summary,
                                         DeviceSections readings);

 private:
  const device::ProcessClock& clock_;
  report::Report rep_;
  EarlierSegments earlier_;
  double first_step_end_ = 0.0;
};

}  // namespace ftbench::report
