#include "run/torch/run_journal.h"

#include <vector>

#include <spdlog/spdlog.h>

#include "report/run_status.h"
#include "run/segment_journal.h"
#include "train/checkpoint_files.h"

namespace ftbench::run::detail {

void RunJournal::update(const std::string& status, const report::Segment* recorded) {
  if (!on_ || failed_) return;
  const std::vector<report::Segment> all = measured_.builder.all_segments(
      recorded != nullptr ? *recorded : assembly_.current_segment(status));
  try {
    write_segment_journal(context_.checkpoint_dir, context_.spec_fingerprint, all);
    written_ = context_.clock.now();
  } catch (const train::CheckpointWriteError& e) {
    failed_ = true;  // said once; the run goes on
    spdlog::warn("{} (a later --resume may not bill this process)", e.what());
  }
}

void RunJournal::on_phase(const report::TimedPhase& /*phase*/) {
  update(report::status::kUnfinished);
}

void RunJournal::on_step(const train::StepMeasurement& /*step*/, double now) {
  if (now - written_ >= 5.0) update(report::status::kUnfinished);
}

}  // namespace ftbench::run::detail
