#include "run/profile_outputs.h"

#include <string_view>

#include "util/io/output_file.h"

namespace ftbench::run {

ProfilePaths profile_paths(const std::string& report_path) {
  std::string stem = report_path;
  constexpr std::string_view kJson = ".json";
  if (stem.size() > kJson.size() &&
      stem.compare(stem.size() - kJson.size(), kJson.size(), kJson) == 0) {
    stem.resize(stem.size() - kJson.size());
  }
  return {stem + ".profile-trace.json", stem + ".profile-ops.csv", stem + ".profile-kernels.csv"};
}

report::ProfileWritten write_profile(const std::vector<metrics::ProfileEvent>& events,
                                     const metrics::ProfileWindow& asked, int64_t last_step,
                                     bool device_activity, const ProfilePaths& paths, bool force) {
  report::ProfileWritten w;
  w.first_step = asked.first_step;
  w.last_step = last_step;
  w.device_activity = device_activity;
  w.tables = metrics::tabulate_profile(events);
  w.trace = paths.trace;
  w.ops_table = paths.ops_table;
  w.kernels_table = paths.kernels_table;
  io::write_file_atomically(metrics::chrome_trace_json(events), w.trace, force);
  io::write_file_atomically(metrics::op_table_csv(w.tables), w.ops_table, force);
  io::write_file_atomically(metrics::kernel_table_csv(w.tables), w.kernels_table, force);
  return w;
}

}  // namespace ftbench::run
