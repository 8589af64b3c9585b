// Everything measured so far into the report, for the final report, a failed or interrupted
// one, and the partial report a checkpoint carries: the report builder's assembly
// (report/report_builder.h) with what only the run's devices and process group tell: the
// environment and the memory, the MFU peaks, the memory prediction and, for a job of several
// processes, every rank's record (gathered to rank 0 after the last step). With the builder, the
// one place of the run that writes the report's types.
#pragma once

#include <string>
#include <vector>

#include "device/torch/backend.h"
#include "device/torch/memory_meter.h"
#include "report/measurements.h"
#include "run/torch/components.h"
#include "run/torch/run_context.h"

namespace ftbench::report {
struct Memory;
struct Segment;
struct RankRecord;
struct Distributed;
}  // namespace ftbench::report

namespace ftbench::run::detail {

// The run's memory as of now (run_memory_record): the phases' peaks, the meter's whole-run host
// peak, and the backend's device counters (none without a backend).
report::Memory run_memory(const std::vector<report::TimedPhase>& phases,
                          const device::MemoryMeter& meter, const device::Backend* backend);

class ReportAssembly {
 public:
  // `checkpointing`: the policy the model is built with ("" before), for the memory prediction.
  ReportAssembly(const RunContext& context, RunMeasurements& measured, const Components& built,
                 const std::string& checkpointing)
      : context_(context), measured_(measured), built_(built), checkpointing_(checkpointing) {}

  // The report as of now with `status`; returns every step's FLOPs.
  std::vector<model::StepFlops> assemble(const std::string& status);
  // Just before the report is written: the phases up to now (summarize included), the run's
  // memory over them and the prediction, and the time it finishes; the steps, the summary and
  // the segments stay as the last assemble() made them.
  void before_write();
  // This process's record among the run's segments, as of now.
  report::Segment current_segment(const std::string& status) const;
  // Data parallel, after the last step and before the exports (which only rank 0 writes, and
  // which may take longer than a collective may wait): every rank's record to rank 0, into the
  // report's `distributed`. A failed run's report has only this rank's.
  void gather_rank_records();

 private:
  report::RankRecord own_rank_record() const;
  // The report's `distributed` without its ranks: the launch, the group, the base's split.
  report::Distributed distributed_header() const;

  const RunContext& context_;
  RunMeasurements& measured_;
  const Components& built_;
  const std::string& checkpointing_;
  bool ranks_gathered_ = false;  // the builder's distributed section has every rank's record
};

}  // namespace ftbench::run::detail
