// What an output of an ftbench command may replace, one rule for every output of every command:
// never a file that the same invocation reads (the spec, the data, a report it compares), never
// an ftbench file of another kind (a gemm result over a report, an event log over a report),
// even with --force, and never through a symbolic link (a link is replaced, not followed).
#pragma once

#include <string>
#include <vector>

#include "util/error.h"

namespace ftbench::io {

// An input of the invocation, named for messages ("the spec file", "data.path", "--baseline").
struct NamedPath {
  std::string what;
  std::string path;
};

// An output that the rule above refuses: exit code 2, the output and what it would destroy
// named.
class OutputRefused : public Error {
 public:
  explicit OutputRefused(const std::string& message) : Error(ExitCode::kBadInput, message) {}
};

// The kind of ftbench file at `path` from its first bytes: "report", "gemm result", "logits
// file", "gate result", "checkpoint manifest", "segment journal" (a JSON object whose "schema"
// is ftbench.<kind>/...), "event log" (":::MLLOG" lines); "" for anything else, a missing file
// and anything that is not a regular file (never opened: a FIFO would block).
std::string ftbench_file_kind(const std::string& path);

// Throws OutputRefused when the output `what` ("-o", "--mllog", "--junit") at `path` is one of
// `inputs` (by name, or the same file through another name or a link), or is an existing
// ftbench file of another kind than `kind` (the kind this output writes). An empty `path` is
// no output.
void check_output_rules(const std::string& what, const std::string& path, const std::string& kind,
                        const std::vector<NamedPath>& inputs);

// An output this process is going to write, held from before the work until the end: a second
// process that claims the same path (two runs started with the same -o) is refused at once
// (exit 5) instead of working for hours and then finding the file taken. A lock file beside the
// output (".<name>.lock"), flock'ed, removed on release; one left by a killed process is taken
// over (the kernel released its lock).
class OutputClaim {
 public:
  explicit OutputClaim(const std::string& path);
  ~OutputClaim();
  OutputClaim(const OutputClaim&) = delete;
  OutputClaim& operator=(const OutputClaim&) = delete;

 private:
  std::string lock_path_;
  int fd_ = -1;
};

}  // namespace ftbench::io
