// Writing ftbench's output files (reports, gemm results, logits, checkpoint and export files):
// atomically, never over an existing file without being asked, and with failures injected for
// tests. Every writer goes through write_all() below.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace ftbench::io {

// A file that cannot be written: what() names it, the step that failed and why (exit 3).
class FileWriteError : public Error {
 public:
  explicit FileWriteError(const std::string& message, ExitCode code = ExitCode::kRunFailed)
      : Error(code, message) {}
};

// The destination (a file, or an export folder) exists and overwriting was not asked for (exit 5).
class FileExistsError : public FileWriteError {
 public:
  explicit FileExistsError(const std::string& message)
      : FileWriteError(message, ExitCode::kOutputExists) {}
};

// Writes `text` to `path` atomically: a temporary file in the same folder, flushed, then
// renamed over. Creates missing parent folders. If `path` exists and `force` is false, throws
// FileExistsError and leaves the file untouched. On any failure (FileWriteError) the previous
// file (if any) is intact and the temporary file removed.
void write_file_atomically(const std::string& text, const std::string& path, bool force);

// Checks, before a run starts, that write_file_atomically(path, force) would not be refused
// because the file exists (a symbolic link there, dangling or not, counts as existing: the
// write would replace the link) and that its folder takes new files. Throws FileExistsError, or
// FileWriteError for a folder in the way or an unwritable folder.
void check_writable(const std::string& path, bool force);

// Removes the temporary files ("<path>.tmp.<pid>") that processes killed while writing `path`
// left beside it: those of processes that no longer run, and one of this process's pid (left by
// an earlier process of the same pid, PID 1 in a container, since this one has not written
// yet). Returns their paths.
std::vector<std::string> remove_stale_temporary_files(const std::string& path);

// Testing aid: a write failure injected through the environment variable
// FTBENCH_INJECT_WRITE_FAILURE, so that tests can show what a full disk or a failing device does
// to a write without one. Its value is an errno name, ENOSPC, EDQUOT, EFBIG or EIO, optionally
// followed by @BYTES: the file's first BYTES bytes are written, then writing fails with that
// errno (without @BYTES, at the first byte); optionally preceded by a kind of file, `report:`
// (reports and other single output files), `checkpoint:` (checkpoint files) or `export:` (the
// files of exported adapters and merged models, model/hf/torch/peft_adapter.h), to fail only those
// (without one, every kind).
struct WriteFailureInjection {
  std::string kind;               // "report", "checkpoint", "export", or "" for every kind
  int error = 0;                  // the errno the write fails with
  std::uint64_t after_bytes = 0;  // bytes of the file written before it fails
};

// Parses a FTBENCH_INJECT_WRITE_FAILURE value; throws BadInput naming the variable and the
// accepted values.
WriteFailureInjection parse_write_failure_injection(std::string_view value);

// The injection FTBENCH_INJECT_WRITE_FAILURE asks for, or nullopt when it is unset or empty.
// Throws BadInput when the value does not parse.
std::optional<WriteFailureInjection> write_failure_injection_from_environment();

// Writes all of `bytes` to `fd` at its current offset, retrying short writes and EINTR, and fails
// as FTBENCH_INJECT_WRITE_FAILURE says (the file offset counts the bytes written so far, so a
// file written in several calls fails at the same place). Returns false with errno set on
// failure. Every writer of ftbench's output files goes through this, so the injection reaches
// them all. Throws BadInput when the variable does not parse.
// `kind`: which kind of file this is, for an injection limited to one kind.
bool write_all(int fd, std::string_view bytes, std::string_view kind = "report");

// `path` made absolute (against the current folder) and lexically normal, without a trailing
// separator ("." is the current folder's path); as given, normal, when the current folder
// cannot be read.
std::filesystem::path absolute_normal(const std::string& path);

// True when `inner` is `outer` or lies inside it; both absolute_normal. Lexical: what a link
// points to is not looked at.
bool path_within(const std::filesystem::path& inner, const std::filesystem::path& outer);

// For a folder written as a whole at `folder` (an export, replaced by --force) and a path that
// is read or written beside it, both absolute_normal: true when `folder` holds `path` or is
// it (folder_holds), or lies inside it (folder_inside), by their names or by where links lead:
// `folder`'s parent resolved (a link at `folder` itself is replaced, not followed), `path`
// resolved whole. "/tmp/lnk/w" holds "/tmp/real/w/spec.yaml" when lnk leads to real.
bool folder_holds(const std::filesystem::path& folder, const std::filesystem::path& path);
bool folder_inside(const std::filesystem::path& folder, const std::filesystem::path& path);

}  // namespace ftbench::io
