// A run re-created from its report (`ftbench run --from-report R.json`): the report's resolved
// spec run as is, its relative paths taken from the folder the run started in, and the files it
// read held to the digests the report recorded (schema 1.11), so that the two runs are the same
// job by compare's fingerprints. Also what a run records for that: the files its data and
// tokenizer came from.
#pragma once

#include <string>
#include <vector>

#include "report/measurements.h"
#include "spec/run_spec.h"
#include "util/error.h"

namespace ftbench::report {
struct Report;
}  // namespace ftbench::report

namespace ftbench::run {

// A report that cannot be run again as it stands (exit 2): what is missing or differs, named.
class RerunError : public BadInput {
 public:
  using BadInput::BadInput;
};

// The files `spec` reads its data and tokenizer from, with sizes and SHA-256 digests: data.path
// and data.validation_path for file data; the tokenizer's file (a folder's tokenizer.json) and
// the tokenizer_config.json beside a tokenizer.json when there is one. Paths absolute. Empty for
// synthetic data with the byte tokenizer. Throws io errors for a file that cannot be read.
std::vector<report::FileRead> input_files(const spec::RunSpec& spec);

// The spec keys that name what the run reads, resolved against the working directory when
// relative. What it writes (output.*, train.checkpoint.dir) goes where the re-run runs, so the
// first run's report, log and exports are never in its way.
inline constexpr const char* kPathKeys[][2] = {
    {"model", "checkpoint"}, {"data", "path"}, {"data", "validation_path"}, {"data", "tokenizer"}};

// The spec keys that name what the run writes, as JSON pointers into the spec. In a re-run each
// goes where the re-run runs, relative to the current folder: an absolute value, or one that
// leaves the folder ("../x"), is taken by its last name ("x") there; and none may land on what
// the first run wrote there (run it from another folder).
inline constexpr const char* kOutputKeys[] = {"/output/report", "/output/mllog", "/output/adapter",
                                              "/output/merged", "/train/checkpoint/dir"};

// The spec of `report` (read from `source`) as a run takes it: source_path dropped, each
// relative path of kPathKeys made absolute against run.working_directory, each output of
// kOutputKeys put in the current folder (output.report left out of the check when
// `report_path_given`: -o names it), loaded and validated as a spec file is. Then each file of
// data.files must hold the bytes it held (size and SHA-256), the spec must read exactly those files
// (input_files() here), and the spec's fingerprint must be the report's. RerunError names the
// report, the key and what differs; a report before 1.11 (no working directory) is refused with
// what to do.
spec::RunSpec spec_from_report(const report::Report& report, const std::string& source,
                               bool report_path_given = false);

}  // namespace ftbench::run
