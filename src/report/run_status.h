// The statuses a report gives a run (run.status) and each of its segments (segments[].status),
// docs/report-schema.md: named once, so that no writer or reader spells one differently.
#pragma once

#include <string>
#include <vector>

namespace ftbench::report::status {

inline constexpr const char* kCompleted = "completed";
inline constexpr const char* kInterrupted = "interrupted";  // a stop signal or --stop-after-steps
inline constexpr const char* kDiverged = "diverged";        // a non-finite loss
inline constexpr const char* kFailed = "failed";
// A segment still running (the segment journal, and a checkpoint's partial report).
inline constexpr const char* kUnfinished = "unfinished";

// The statuses of a run, in the order messages list them.
inline const std::vector<std::string>& run_statuses() {
  static const std::vector<std::string> statuses = {kCompleted, kInterrupted, kDiverged, kFailed};
  return statuses;
}
// A segment's: a run's, or kUnfinished.
inline const std::vector<std::string>& segment_statuses() {
  static const std::vector<std::string> statuses = {kCompleted, kInterrupted, kDiverged, kFailed,
                                                    kUnfinished};
  return statuses;
}

}  // namespace ftbench::report::status
