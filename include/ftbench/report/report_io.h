// Reading and writing report files.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "ftbench/report/report.h"

namespace ftbench::report {

class ReportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown when the destination exists and overwriting was not asked for.
class ReportExistsError : public ReportError {
 public:
  using ReportError::ReportError;
};

// Writes `report` as pretty JSON to `path` atomically: a temporary file in the same folder,
// flushed, then renamed over. Creates missing parent folders. If `path` exists and `force` is
// false, throws ReportExistsError and leaves the file untouched. On any failure the previous
// file (if any) is intact and the temporary file removed.
void write_report(const Report& report, const std::string& path, bool force);

// The same atomic write for any text file (`ftbench gemm -o`): same guarantees, same errors.
void write_file_atomically(const std::string& text, const std::string& path, bool force);

// Checks, before a run starts, that write_report(path, force) would not be refused because the
// file exists. Throws ReportExistsError.
void check_report_writable(const std::string& path, bool force);

// Reads and checks a report file; throws ReportError naming `path` and the problem.
Report read_report(const std::string& path);

// The same from the file's text; `source` stands for the file name in messages.
Report parse_report(std::string_view text, const std::string& source);

// A whole file as bytes; throws ReportError "<path>: cannot read: <reason>".
std::string read_whole_file(const std::string& path);

}  // namespace ftbench::report
