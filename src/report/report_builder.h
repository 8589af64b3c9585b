// The report of one `ftbench run` process, built here from what its phases measured (the report
// builder): the run fills the measurements (measurements.h) as it goes, and every assembly (a
// checkpoint's partial report, a failed or interrupted run's, the final one) maps them into the
// report's schema (report.h, through records.h) with the steps of the earlier segments and of
// this one, the summary over them and this process's segment record. Torch-free: what only the
// devices tell comes in as readings. The report's types are declared, not defined, here: the code
// that measures does not see the schema; the builder, the run's assembly
// (run/torch/report_assembly.h) and the readers of reports do.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "device/process_clock.h"
#include "model/step_flops.h"
#include "report/measurements.h"
#include "report/metrics/summary_options.h"
#include "train/train_result.h"

namespace ftbench::report {

struct Report;
struct Segment;
struct StepRecord;
struct Distributed;
struct Memory;
// Defined in records.h.
struct EarlierSegments;
struct DeviceSections;

class ReportBuilder {
 public:
  explicit ReportBuilder(const device::ProcessClock& clock);
  ~ReportBuilder();
  ReportBuilder(const ReportBuilder&) = delete;
  ReportBuilder& operator=(const ReportBuilder&) = delete;

  // What the phases measured so far, filled as they go.
  Measured& measured() { return measured_; }
  const Measured& measured() const { return measured_; }

  // A resumed run: the earlier segments join the report, and this process is the next one.
  void resume(EarlierSegments earlier);
  const std::vector<report::Segment>& earlier_segments() const;
  int64_t segment_index() const;

  // The end of this process's first optimizer step, in process seconds.
  void first_step_ended(double process_seconds) { first_step_end_ = process_seconds; }
  // From t0 (measured().start.t0_before_process_seconds before this process), 0 before that
  // step.
  double time_to_first_step_seconds() const;

  // This process's steps as the report numbers them (its segment's index on each).
  std::vector<report::StepRecord> segment_steps(const train::TrainResult& result) const;
  // This process's record among the segments, as of now on the process clock.
  report::Segment segment(const std::string& status, const train::TrainResult& result,
                          std::optional<int64_t> intra_op_threads) const;
  // The earlier segments and `current` after them: what the segment journal holds.
  std::vector<report::Segment> all_segments(const report::Segment& current) const;

  // A job of several processes: the launch, the group and every rank's record the run gathered
  // (or this rank's alone); each assembly summarises the ranks against the job's throughput.
  void distributed(report::Distributed section);

  // Everything measured so far into the report, with `status`: the measurements, the earlier
  // segments' steps and this one's, the batching in effect, the summary over every step, the
  // device's sections, and this segment's record last. Returns every step's FLOPs, the earlier
  // segments' first.
  std::vector<model::StepFlops> assemble(const std::string& status,
                                         const train::TrainResult& result,
                                         const metrics::SummaryOptions& summary,
                                         DeviceSections readings);

  // Just before the report is written: the measurements as they are now (the phase that
  // summarised included), the run's memory over the phases given, and the time it finishes;
  // the steps, the summary and the segment records stay as the last assembly made them.
  void before_write(report::Memory memory);

  // The report as of the last assembly (or before_write).
  const report::Report& report() const;
  // The report as of the last assembly with the measurements as they are now (a checkpoint's
  // save, recorded while its manifest is written), as JSON; the report itself is left as it was.
  nlohmann::ordered_json report_json_now() const;

 private:
  // The measurements into the report's sections they fill.
  void map_measurements(report::Report& report) const;
  // The run's memory and the prediction beside it.
  void set_memory(report::Memory memory);

  struct State;
  const device::ProcessClock& clock_;
  Measured measured_;
  std::unique_ptr<State> state_;
  double first_step_end_ = 0.0;
};

}  // namespace ftbench::report
