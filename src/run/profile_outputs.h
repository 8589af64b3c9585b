// The files `ftbench run --profile-steps` writes beside the report, for the report's `profile`
// record (docs/methodology.md, section 20; docs/report-schema.md, `profile`).
#pragma once

#include <string>
#include <vector>

#include "report/measurements.h"
#include "report/metrics/profile_table.h"

namespace ftbench::run {

struct ProfilePaths {
  std::string trace;      // <stem>.profile-trace.json: Chrome trace (Perfetto, chrome://tracing)
  std::string ops_table;  // <stem>.profile-ops.csv
  std::string kernels_table;  // <stem>.profile-kernels.csv
};

// Beside the report: its path without a final ".json", then the suffixes above
// ("out/run.json" -> "out/run.profile-trace.json"; "out/run" -> "out/run.profile-trace.json").
ProfilePaths profile_paths(const std::string& report_path);

// Writes the trace and the two tables (each atomically; an existing file is replaced only with
// `force`: io::FileExistsError) and returns what was written: `asked` the window asked for,
// `last_step` the last step recorded (earlier when the run stopped inside the window), and the
// tables (the report's record of them: report::profile_record, report/records.h).
report::ProfileWritten write_profile(const std::vector<metrics::ProfileEvent>& events,
                                     const metrics::ProfileWindow& asked, int64_t last_step,
                                     bool device_activity, const ProfilePaths& paths, bool force);

}  // namespace ftbench::run
