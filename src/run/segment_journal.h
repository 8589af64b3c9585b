// The segment journal of a run's checkpoint folder (train::kSegmentJournal, segments.json):
// every process (segment) of the run so far as the report records it, kept up to date while
// the run goes on, so that a process that ends before its first checkpoint (stopped or failed
// in set-up, killed) is still billed when the run is resumed; and the segments a resumed run
// continues from. The checkpoint folder and its errors are train's (train/checkpoint_files.h);
// what the journal holds is the report's segment records, so it is with the run, which
// keeps it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/report.h"
#include "train/checkpoint_files.h"

namespace ftbench::run {

inline constexpr const char* kSegmentJournalFormat = "ftbench.segments/1";

// A segment journal's content: the job it belongs to and every process so far.
struct SegmentJournal {
  std::string spec_fingerprint;
  std::vector<report::Segment> segments;
};

// The journal's JSON ({"format", "spec_fingerprint", "segments": [report segments]}).
std::string segment_journal_text(const SegmentJournal& journal);
// Parses a journal's text; train::CheckpointError "<source>: ..." when it is not JSON, nests too
// deep, is of another format, or its segments are not numbered 1, 2, ... in order.
SegmentJournal parse_segment_journal(std::string_view text, const std::string& source);

// The segment journal of `dir` (train::kSegmentJournal), written atomically;
// train::CheckpointWriteError when it cannot be.
void write_segment_journal(const std::string& dir, const std::string& spec_fingerprint,
                           const std::vector<report::Segment>& segments);
// The journal's segments when `dir` holds one of the run that `spec_fingerprint` and
// `first_started_at_utc` (its first segment's start) identify; nullopt when there is none or it
// is another run's. train::CheckpointError when it is damaged.
std::optional<std::vector<report::Segment>> read_segment_journal(
    const std::string& dir, const std::string& spec_fingerprint,
    const std::string& first_started_at_utc);
// The same for a folder without a checkpoint, whose run is known by its job alone: the journal's
// segments when it is of `spec_fingerprint` (processes killed before their first save).
std::optional<std::vector<report::Segment>> read_segment_journal_of_job(
    const std::string& dir, const std::string& spec_fingerprint);

// The segments a resumed run continues from: those of the checkpoint's report, and, when the
// checkpoint folder's journal (read_segment_journal) is of the same run and agrees with them,
// the journal's later record of each and the processes it knows of that the checkpoint does
// not (stopped or failed in set-up, killed, or ran past the checkpoint). Steps a segment ran
// beyond `checkpoint_step` are not in the resumed report: they are counted in its
// discarded_steps, and its time stays billed.
std::vector<report::Segment> segments_to_resume(
    const std::vector<report::Segment>& from_checkpoint,
    const std::optional<std::vector<report::Segment>>& journal, int64_t checkpoint_step);

}  // namespace ftbench::run
