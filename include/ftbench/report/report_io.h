// Reading and writing report files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

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
// file exists (a symbolic link there, dangling or not, counts as existing: the write would
// replace the link) and that its folder takes new files. Throws ReportExistsError, or
// ReportError for a folder in the way or an unwritable folder.
void check_report_writable(const std::string& path, bool force);

// Removes the temporary files ("<path>.tmp.<pid>") that processes killed while writing `path`
// left beside it: those of processes that no longer run, and one of this process's pid (left by
// an earlier process of the same pid, PID 1 in a container, since this one has not written
// yet). Returns their paths.
std::vector<std::string> remove_stale_temporary_files(const std::string& path);

// Reads and checks a report file; throws ReportError naming `path` and the problem.
Report read_report(const std::string& path);

// Testing aid: a write failure injected through the environment variable
// FTBENCH_INJECT_WRITE_FAILURE, so that tests can show what a full disk or a failing device does
// to a write without one. Its value is an errno name, ENOSPC, EDQUOT, EFBIG or EIO, optionally
// followed by @BYTES: the file's first BYTES bytes are written, then writing fails with that
// errno (without @BYTES, at the first byte); optionally preceded by a kind of file, `report:`
// (reports and other single output files), `checkpoint:` (checkpoint files) or `export:` (the
// files of exported adapters and merged models, hf/peft_adapter.h), to fail only those
// (without one, every kind).
struct WriteFailureInjection {
  std::string kind;               // "report", "checkpoint", "export", or "" for every kind
  int error = 0;                  // the errno the write fails with
  std::uint64_t after_bytes = 0;  // bytes of the file written before it fails
};

// Parses a FTBENCH_INJECT_WRITE_FAILURE value; throws ReportError naming the variable and the
// accepted values.
WriteFailureInjection parse_write_failure_injection(std::string_view value);

// The injection FTBENCH_INJECT_WRITE_FAILURE asks for, or nullopt when it is unset or empty.
// Throws ReportError when the value does not parse.
std::optional<WriteFailureInjection> write_failure_injection_from_environment();

// Writes all of `bytes` to `fd` at its current offset, retrying short writes and EINTR, and fails
// as FTBENCH_INJECT_WRITE_FAILURE says (the file offset counts the bytes written so far, so a
// file written in several calls fails at the same place). Returns false with errno set on
// failure. Every writer of ftbench's output files goes through this, so the injection reaches
// them all. Throws ReportError when the variable does not parse.
// `kind`: which kind of file this is, for an injection limited to one kind.
bool write_all(int fd, std::string_view bytes, std::string_view kind = "report");
// The same from the file's text; `source` stands for the file name in messages.
Report parse_report(std::string_view text, const std::string& source);

// A whole report file as bytes, within a report's size limit (io/whole_file.h); throws
// ReportError "<path>: cannot read: <reason>".
std::string read_whole_file(const std::string& path);

}  // namespace ftbench::report
