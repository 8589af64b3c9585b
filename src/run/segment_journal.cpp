#include "run/segment_journal.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/report_io.h"
#include "report/run_status.h"
#include "util/io/output_file.h"
#include "util/io/whole_file.h"
#include "util/text/json_fields.h"
#include "util/text/messages.h"

namespace ftbench::run {
namespace fs = std::filesystem;
using train::CheckpointError;
using train::CheckpointWriteError;
using train::kSegmentJournal;

namespace {

using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;

// A journal of 10,000 processes is about 4 MB; one of more is not of a run.
constexpr io::FileKind kSegmentJournalFile{"segment journal", 64 * io::kMiB};
constexpr std::size_t kMaxSegments = 10'000;

using JournalReader = text::JsonFields<Json, CheckpointError>;

}  // namespace

std::string segment_journal_text(const SegmentJournal& journal) {
  OJson j;
  j["format"] = kSegmentJournalFormat;
  j["spec_fingerprint"] = journal.spec_fingerprint;
  OJson list = OJson::array();
  for (const report::Segment& g : journal.segments) list.push_back(report::to_json(g));
  j["segments"] = std::move(list);
  return j.dump(1) + "\n";
}

namespace {

// What a segment of the journal must be to be billed: the rules a report's segments keep
// (docs/report-schema.md, Consistency), and, one after the other, processes that started later
// than the one before (a copied record is not another process).
void check_journal_segment(const JournalReader& r, const std::vector<report::Segment>& segments,
                           const std::string& path) {
  const report::Segment& g = segments.back();
  const auto i = static_cast<int64_t>(segments.size());
  if (g.index != i) r.fail(fmt::format("{}.index: expected {}, found {}", path, i, g.index));
  const std::vector<std::string>& kStatuses = report::status::segment_statuses();
  if (std::find(kStatuses.begin(), kStatuses.end(), g.status) == kStatuses.end()) {
    r.fail(fmt::format("{}.status: expected one of {}, found {}", path, text::join(kStatuses),
                       text::quoted(g.status)));
  }
  const bool no_steps = g.first_step == 0 && g.last_step == 0;
  if (!no_steps && !(g.first_step >= 1 && g.first_step <= g.last_step)) {
    r.fail(fmt::format("{}: first_step {} and last_step {}: expected both 0 or 1 <= first <= last",
                       path, g.first_step, g.last_step));
  }
  const int64_t ran = no_steps ? 0 : g.last_step - g.first_step + 1;
  if (g.discarded_steps > ran) {
    r.fail(
        fmt::format("{}.discarded_steps: {} of the {} steps it ran", path, g.discarded_steps, ran));
  }
  constexpr double kMaxSeconds = 366.0 * 86400.0;
  if (!(g.run_seconds <= kMaxSeconds) ||
      g.time_to_first_step_seconds > g.run_seconds * (1.0 + 1e-6) + 1e-3) {
    r.fail(
        fmt::format("{}: run_seconds {} and time_to_first_step_seconds {}: expected at most "
                    "366 days, the second within the first",
                    path, g.run_seconds, g.time_to_first_step_seconds));
  }
  if (segments.size() > 1 && !(segments[segments.size() - 2].started_at_utc < g.started_at_utc)) {
    r.fail(fmt::format("{}.started_at_utc: {} is not after the segment before it ({})", path,
                       text::quoted(g.started_at_utc),
                       text::quoted(segments[segments.size() - 2].started_at_utc)));
  }
}

}  // namespace

SegmentJournal parse_segment_journal(std::string_view text, const std::string& source) {
  const Json j = train::parse_checkpoint_json(text, source, "not a segment journal: ");
  const JournalReader r(source);
  if (!j.is_object()) r.fail("expected a JSON object, found " + std::string(j.type_name()));
  const std::string format = r.string(j, "", "format");
  if (format != kSegmentJournalFormat) {
    r.fail(fmt::format("format: expected \"{}\", found {}", kSegmentJournalFormat,
                       text::quoted(format)));
  }
  SegmentJournal journal;
  journal.spec_fingerprint = r.string(j, "", "spec_fingerprint");
  const Json& list = r.array(j, "", "segments");
  if (list.size() > kMaxSegments) {
    r.fail(fmt::format("segments: {} of them; a run has at most {}", list.size(), kMaxSegments));
  }
  try {
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string path = r.index("segments", i);
      journal.segments.push_back(report::segment_from_json(list[i], source, path));
      check_journal_segment(r, journal.segments, path);
    }
  } catch (const report::ReportError& e) {
    throw CheckpointError(e.what());
  }
  return journal;
}

void write_segment_journal(const std::string& dir, const std::string& spec_fingerprint,
                           const std::vector<report::Segment>& segments) {
  try {
    io::write_file_atomically(segment_journal_text({spec_fingerprint, segments}),
                              (fs::path(dir) / kSegmentJournal).string(), /*force=*/true);
  } catch (const io::FileWriteError& e) {
    throw CheckpointWriteError(e.what());
  }
}

std::optional<std::vector<report::Segment>> read_segment_journal_of_job(
    const std::string& dir, const std::string& spec_fingerprint) {
  const std::string path = (fs::path(dir) / kSegmentJournal).string();
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  std::string text;
  try {
    text = io::read_whole_file(path, kSegmentJournalFile);
  } catch (const io::FileReadError& e) {
    throw CheckpointError(path + ": cannot read: " + e.reason());
  }
  SegmentJournal journal = parse_segment_journal(text, path);
  // Another job's, or none recorded.
  if (journal.spec_fingerprint != spec_fingerprint || journal.segments.empty()) {
    return std::nullopt;
  }
  return std::move(journal.segments);
}

std::optional<std::vector<report::Segment>> read_segment_journal(
    const std::string& dir, const std::string& spec_fingerprint,
    const std::string& first_started_at_utc) {
  std::optional<std::vector<report::Segment>> segments =
      read_segment_journal_of_job(dir, spec_fingerprint);
  // Another run of the same job in the same folder (started afresh) is not this run's.
  if (segments && segments->front().started_at_utc != first_started_at_utc) return std::nullopt;
  return segments;
}

std::vector<report::Segment> segments_to_resume(
    const std::vector<report::Segment>& from_checkpoint,
    const std::optional<std::vector<report::Segment>>& journal, int64_t checkpoint_step) {
  std::vector<report::Segment> out = from_checkpoint;
  const size_t k = from_checkpoint.size();
  if (journal && journal->size() >= k) {
    bool agrees = true;
    for (size_t i = 0; i < k && agrees; ++i) {
      agrees = (*journal)[i].started_at_utc == from_checkpoint[i].started_at_utc;
    }
    if (agrees) {
      for (size_t i = 0; i < k; ++i) {
        // The later record of the same process: the journal is written after each save and at
        // each phase's end, the checkpoint's copy only at its save.
        if ((*journal)[i].run_seconds > out[i].run_seconds) out[i] = (*journal)[i];
      }
      out.insert(out.end(), journal->begin() + static_cast<std::ptrdiff_t>(k), journal->end());
    }
  }
  for (report::Segment& g : out) {
    if (g.last_step > checkpoint_step) {
      g.discarded_steps = g.last_step - std::max(g.first_step, checkpoint_step + 1) + 1;
    }
  }
  return out;
}

}  // namespace ftbench::run
