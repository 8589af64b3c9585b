// The segment journal beside the checkpoints (train/checkpoint_files.h), kept by rank 0 so that
// the next resume bills this process whatever becomes of it: from the start by a resumed run
// (and by one that saves checkpoints), from its first save by a fresh one (before, there is
// nothing to resume from); written at every phase's end, every save, every few seconds of
// training and at the end.
#pragma once

#include <string>

#include "report/measurements.h"
#include "run/torch/observers.h"
#include "run/torch/report_assembly.h"
#include "run/torch/run_context.h"

namespace ftbench::report {
struct Segment;
}  // namespace ftbench::report

namespace ftbench::run::detail {

class RunJournal : public RunObserver {
 public:
  RunJournal(const RunContext& context, const RunMeasurements& measured,
             const ReportAssembly& assembly)
      : context_(context), measured_(measured), assembly_(assembly) {}

  // Kept from now on (rank 0 only: the others never write it).
  void keep() { on_ = context_.lead(); }
  // The earlier segments and this one with `status`: `recorded`, this segment as the report
  // records it (so that the two agree), else as of now. A write that fails is said once, and
  // the run goes on without the journal.
  void update(const std::string& status, const report::Segment* recorded = nullptr);

  void on_phase(const report::TimedPhase& phase) override;
  // Every few seconds of training: a process killed without notice is billed to its last record.
  void on_step(const train::StepMeasurement& step, double now) override;

 private:
  const RunContext& context_;
  const RunMeasurements& measured_;
  const ReportAssembly& assembly_;
  bool on_ = false;
  bool failed_ = false;
  double written_ = 0.0;  // process seconds
};

}  // namespace ftbench::run::detail
