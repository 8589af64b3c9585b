// Reading and writing report files.
#pragma once

#include <string>
#include <string_view>

#include "report/report.h"
#include "util/error.h"

namespace ftbench::report {

// A report that cannot be read, or that does not hold together. Exit 3, as for a run that made
// such a report; the commands that read reports given to them say that the input is bad (2).
class ReportError : public Error {
 public:
  explicit ReportError(const std::string& message, ExitCode code = ExitCode::kRunFailed)
      : Error(code, message) {}
};

// Writes `report` as pretty JSON to `path` atomically: a temporary file in the same folder,
// flushed, then renamed over: io::write_file_atomically, whose errors it throws
// (io::FileExistsError when `path` exists and `force` is false). io::check_writable says
// beforehand whether it would be taken.
void write_report(const Report& report, const std::string& path, bool force);

// Reads and checks a report file; throws ReportError naming `path` and the problem.
Report read_report(const std::string& path);

// The same from the file's text; `source` stands for the file name in messages.
Report parse_report(std::string_view text, const std::string& source);

// A whole report file as bytes, within a report's size limit (util/io/whole_file.h); throws
// ReportError "<path>: cannot read: <reason>".
std::string read_whole_file(const std::string& path);

}  // namespace ftbench::report
