// Where a run writes (report, checkpoints, exports) and the checks made on those places before
// any machine time is spent: a run must not train for hours and then find it may not write.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "spec/run_spec.h"
#include "util/io/output_rules.h"

namespace ftbench::report {
struct Report;
}  // namespace ftbench::report

namespace ftbench::run {

// The report path the spec asks for: output.report with "{name}" replaced by output.name.
std::string default_report_path(const spec::RunSpec& spec);
// The event log the spec asks for: output.mllog with "{name}" replaced ("" = none).
std::string mllog_path(const spec::RunSpec& spec);

// The checkpoint folder the spec asks for: train.checkpoint.dir with "{name}" replaced.
std::string checkpoint_dir(const spec::RunSpec& spec);
// The export folders: output.adapter and output.merged with "{name}" replaced ("" = none).
std::string adapter_export_dir(const spec::RunSpec& spec);
std::string merged_export_dir(const spec::RunSpec& spec);

// An export folder must be new (or `force` given) and its parent a folder this process can
// create entries in: checked by creating and removing a folder there. A dangling symbolic link
// counts as existing (the export would not replace it silently). io::FileExistsError, or
// io::FileWriteError naming `key` (output.adapter, output.merged).
void check_export_writable(const std::string& dir, const char* key, bool force);

// Why this process cannot create entries in `dir` or, when it does not exist yet, in the
// nearest folder above it that does: "" when it can.
std::string folder_not_writable(const std::string& dir);

// A folder the run will write into (it exists) must take new entries: checked by creating and
// removing one, so that a read-only folder is found before the model is built, not at the first
// checkpoint. io::FileWriteError (exit code 3) naming `key` otherwise.
void check_folder_writable(const std::string& dir, const char* key);

// The files a run of `spec` reads, named by their keys ("the spec file", "data.path", ...): its
// outputs may not be any of them (util/io/output_rules.h). Paths as the spec gives them; empty ones
// are none.
std::vector<io::NamedPath> spec_input_files(const spec::RunSpec& spec);

// The report now at `path`, when there is one ftbench can read; nullopt otherwise.
std::optional<report::Report> existing_report(const std::string& path);

// With --resume, the report of the run being resumed may be replaced: same job, not finished.
bool may_replace_report(const std::optional<report::Report>& old, const std::string& fingerprint);

}  // namespace ftbench::run
