// The files `ftbench run --profile-steps` writes beside the report, and the report's `profile`
// record (docs/methodology.md, section 20; docs/report-schema.md, `profile`).
#pragma once

#include <string>
#include <vector>

#include "report/metrics/profile_table.h"
#include "report/report.h"

namespace ftbench::run {

struct ProfilePaths {
  std::string trace;      // <stem>.profile-trace.json: Chrome trace (Perfetto, chrome://tracing)
  std::string ops_table;  // <stem>.profile-ops.csv
  std::string kernels_table;  // <stem>.profile-kernels.csv
};

// Beside the report: its path without a final ".json", then the suffixes above
// ("out/run.json" -> "out/run.profile-trace.json"; "out/run" -> "out/run.profile-trace.json").
ProfilePaths profile_paths(const std::string& report_path);

// The report's record of a profile: `asked` the window asked for, `last_step` the last step
// recorded (earlier when the run stopped inside the window), `top_ops` the first 12 ops by self
// time, the attention ops with their figures.
report::Profile profile_record(const metrics::ProfileTables& tables,
                               const metrics::ProfileWindow& asked, int64_t last_step,
                               bool device_activity, const ProfilePaths& paths);

// Writes the trace and the two tables (each atomically; an existing file is replaced only with
// `force`: io::FileExistsError) and returns profile_record() of them.
report::Profile write_profile(const std::vector<metrics::ProfileEvent>& events,
                              const metrics::ProfileWindow& asked, int64_t last_step,
                              bool device_activity, const ProfilePaths& paths, bool force);

// The lines the run logs when the profile is written: the window, the scopes, the first ops,
// the attention ops and the files.
std::vector<std::string> profile_summary_lines(const report::Profile& profile);

}  // namespace ftbench::run
