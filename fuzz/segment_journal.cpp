// Fuzz target: the segment journal reader (run::parse_segment_journal on a checkpoint folder's
// segments.json, what `ftbench run --resume` merges into the resumed report's segments). An
// accepted journal is merged as a resume would, written back and read again: what ftbench
// writes it must read.
#include <stdexcept>
#include <string>
#include <string_view>

#include "fuzz_target.h"
#include "run/segment_journal.h"
#include "train/checkpoint_files.h"

FuzzVerdict ftbench_fuzz_one(const uint8_t* data, size_t size) {
  namespace train = ftbench::train;
  namespace run = ftbench::run;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  run::SegmentJournal journal;
  try {
    journal = run::parse_segment_journal(text, "fuzz-segments.json");
  } catch (const train::CheckpointError&) {
    return FuzzVerdict::kRejected;
  }
  // A resume from a checkpoint that knows the journal's first segment, at its last step.
  if (!journal.segments.empty()) {
    const std::vector<ftbench::report::Segment> first(journal.segments.begin(),
                                                      journal.segments.begin() + 1);
    run::segments_to_resume(first, journal.segments, journal.segments.front().last_step);
  }
  const std::string written = run::segment_journal_text(journal);
  try {
    run::parse_segment_journal(written, "fuzz-written.json");
  } catch (const train::CheckpointError& e) {
    throw std::logic_error(std::string("a journal written by segment_journal_text() is refused: ") +
                           e.what());
  }
  return FuzzVerdict::kAccepted;
}
