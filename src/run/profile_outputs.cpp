#include "run/profile_outputs.h"

#include <algorithm>

#include <fmt/format.h>

#include "util/io/output_file.h"
#include "util/text/messages.h"

namespace ftbench::run {
namespace {

constexpr std::size_t kTopOps = 12;

report::ProfileOp op_record(const metrics::OpRow& row) {
  return {row.name, row.calls, double(row.self_ns) / 1e9, double(row.flops)};
}

std::string short_scope(const std::string& name) {
  constexpr std::string_view kPrefix = "ftbench::";
  return name.rfind(kPrefix, 0) == 0 ? name.substr(kPrefix.size()) : name;
}

}  // namespace

ProfilePaths profile_paths(const std::string& report_path) {
  std::string stem = report_path;
  constexpr std::string_view kJson = ".json";
  if (stem.size() > kJson.size() &&
      stem.compare(stem.size() - kJson.size(), kJson.size(), kJson) == 0) {
    stem.resize(stem.size() - kJson.size());
  }
  return {stem + ".profile-trace.json", stem + ".profile-ops.csv", stem + ".profile-kernels.csv"};
}

report::Profile profile_record(const metrics::ProfileTables& tables,
                               const metrics::ProfileWindow& asked, int64_t last_step,
                               bool device_activity, const ProfilePaths& paths) {
  report::Profile p;
  p.first_step = asked.first_step;
  p.last_step = last_step;
  p.trace = paths.trace;
  p.ops_table = paths.ops_table;
  p.kernels_table = paths.kernels_table;
  p.device_activity = device_activity;
  p.op_self_seconds = double(tables.op_self_ns) / 1e9;
  p.kernel_seconds = double(tables.kernel_ns) / 1e9;
  p.flops = double(tables.flops);
  p.leaf_input_bytes = tables.leaf_input_bytes;
  p.leaf_calls_without_bytes = tables.leaf_calls_without_bytes;
  for (const metrics::ScopeRow& s : tables.scopes) {
    p.scopes.push_back(
        {short_scope(s.name), s.calls, double(s.total_ns) / 1e9, double(s.self_ns) / 1e9});
  }
  for (std::size_t i = 0; i < tables.ops.size() && i < kTopOps; ++i) {
    p.top_ops.push_back(op_record(tables.ops[i]));
  }
  for (const std::string& name : tables.attention_ops) {
    const auto it = std::find_if(tables.ops.begin(), tables.ops.end(),
                                 [&](const metrics::OpRow& r) { return r.name == name; });
    if (it != tables.ops.end()) p.attention_ops.push_back(op_record(*it));
  }
  return p;
}

report::Profile write_profile(const std::vector<metrics::ProfileEvent>& events,
                              const metrics::ProfileWindow& asked, int64_t last_step,
                              bool device_activity, const ProfilePaths& paths, bool force) {
  const metrics::ProfileTables tables = metrics::tabulate_profile(events);
  io::write_file_atomically(metrics::chrome_trace_json(events), paths.trace, force);
  io::write_file_atomically(metrics::op_table_csv(tables), paths.ops_table, force);
  io::write_file_atomically(metrics::kernel_table_csv(tables), paths.kernels_table, force);
  return profile_record(tables, asked, last_step, device_activity, paths);
}

std::vector<std::string> profile_summary_lines(const report::Profile& p) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format(
      "profile of step{} {}: ops {:.3f} s of self time, {:.4g} GFLOP counted{}",
      p.first_step == p.last_step ? "" : "s",
      p.first_step == p.last_step ? fmt::format("{}", p.first_step)
                                  : fmt::format("{} to {}", p.first_step, p.last_step),
      p.op_self_seconds, p.flops / 1e9,
      p.device_activity ? fmt::format(", device kernels {:.3f} s", p.kernel_seconds) : ""));
  std::vector<std::string> scopes;
  for (const report::ProfileScope& s : p.scopes) {
    scopes.push_back(fmt::format("{} {:.3f} s", s.name, s.self_seconds));
  }
  if (!scopes.empty()) lines.push_back("  scopes (own time): " + text::join(scopes));
  const std::size_t shown = std::min<std::size_t>(p.top_ops.size(), 6);
  for (std::size_t i = 0; i < shown; ++i) {
    const report::ProfileOp& o = p.top_ops[i];
    lines.push_back(
        fmt::format("  {:>6.1f}%  {:>9.3f} ms  {:>6} calls  {}",
                    p.op_self_seconds > 0.0 ? 100.0 * o.self_seconds / p.op_self_seconds : 0.0,
                    o.self_seconds * 1e3, o.calls, text::printable(o.name)));
  }
  std::vector<std::string> attention;
  for (const report::ProfileOp& o : p.attention_ops) attention.push_back(o.name);
  if (!attention.empty()) lines.push_back("  attention ops: " + text::join(attention));
  lines.push_back(
      fmt::format("  trace {}, tables {} and {}", p.trace, p.ops_table, p.kernels_table));
  return lines;
}

}  // namespace ftbench::run
