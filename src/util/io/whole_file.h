// Whole-file reads with a size limit for each kind of file ftbench reads, in one place, so that
// no input (an endless stream such as /dev/zero, a FIFO that never closes, a multi-gigabyte file
// given by mistake) can grow memory until the machine runs out. docs/spec.md ("Limits") lists the
// kinds and their limits; a change here changes that table.
//
// What can be read: a regular file, or a pipe (a FIFO, `<(...)`, /dev/stdin from a pipe), which is
// read up to the limit and refused past it. Folders, character and block devices (/dev/zero, a
// terminal) and sockets are refused before any byte is read.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "util/error.h"

namespace ftbench::io {

// A kind of file and the most bytes one may hold.
struct FileKind {
  std::string_view name;  // "run spec": what the messages call it
  std::uint64_t max_bytes;
};

inline constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// Specs, catalogs and the small JSON files of a checkpoint folder are kilobytes; the limits leave
// three orders of magnitude. Reports hold every step (363 bytes each in a ci-tiny report), and
// a checkpoint's manifest holds the report: the ceiling on a run's steps (spec/limits.h) keeps
// the largest report below their limit.
// A spec is kilobytes, and YAML scanning takes about 0.2 s a megabyte on the 2-core VM: 1 MiB
// keeps a pasted file's refusal under a quarter of a second.
inline constexpr FileKind kRunSpecFile{"run spec", 1 * kMiB};
inline constexpr FileKind kCatalogFile{"catalog", 16 * kMiB};
inline constexpr FileKind kSkyPilotCsvFile{"SkyPilot catalog", 256 * kMiB};
inline constexpr FileKind kReportFile{"report", 1 * kGiB};
inline constexpr FileKind kGemmResultFile{"gemm result", 64 * kMiB};
inline constexpr FileKind kCheckpointManifestFile{"checkpoint manifest", 1 * kGiB};
inline constexpr FileKind kHfJsonFile{"Hugging Face JSON file", 16 * kMiB};
inline constexpr FileKind kTokenizerFile{"tokenizer", 256 * kMiB};
inline constexpr FileKind kTextFile{"text file", 256 * kMiB};
// Data files in Alpaca's JSON-array form are parsed whole; JSON Lines files are streamed with
// the two limits below (data/file_dataset.h).
inline constexpr FileKind kDataArrayFile{"JSON data file", 1 * kGiB};
inline constexpr FileKind kDataLinesFile{"JSON Lines data file", 16 * kGiB};
inline constexpr std::uint64_t kMaxDataLineBytes = 64 * kMiB;

// A file that cannot be read, or cannot be a file of its kind. what() is "<path>: <reason>".
class FileReadError : public BadInput {
 public:
  FileReadError(std::string path, std::string reason);
  const std::string& path() const { return path_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string path_;
  std::string reason_;
};

// "16 MiB", "1 GiB", "1.5 GiB".
std::string format_limit(std::uint64_t bytes);

// Opens `path` for reading after checking that it is a regular file or a pipe; returns the open
// descriptor (O_CLOEXEC) and sets `regular_bytes` to the file's size (0 for a pipe). Throws
// FileReadError naming the file: missing, unreadable, a folder, a device or a socket, or a
// regular file larger than kind.max_bytes.
int open_for_reading(const std::string& path, const FileKind& kind, std::uint64_t& regular_bytes);

// What a wait for a FIFO's writer asks, every 100 ms, to know whether the process was asked to
// stop (ftbench-bin sets train::StopSignals::stop_requested): a stop ends the wait with
// InterruptedRun (exit 4). None by default.
using StopRequested = bool (*)();
void set_stop_requested(StopRequested check);

// All of `path`; FileReadError as open_for_reading says, or when a pipe delivers more than
// kind.max_bytes, or a read fails.
std::string read_whole_file(const std::string& path, const FileKind& kind);

// Reads a file line by line through a fixed buffer: each line without its '\n' (a '\r' before
// it is kept). For streams too large to hold: a line longer than `max_line_bytes` or a file
// longer than kind.max_bytes is a FileReadError naming the line. Not copyable; closes the file.
class LineReader {
 public:
  LineReader(const std::string& path, const FileKind& kind, std::uint64_t max_line_bytes);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line into `line`; false at the end of the file.
  bool next(std::string& line);
  // 1-based number of the line next() returned last.
  std::int64_t line_number() const { return line_number_; }
  // The first bytes of the file (at most 64 KiB) without consuming them: what the file starts
  // with decides its format.
  std::string_view peek();
  // Everything not read yet, for a file that is parsed whole after all; FileReadError when the
  // file holds more than `kind.max_bytes`.
  std::string rest(const FileKind& kind);

 private:
  bool fill();

  std::string path_;
  FileKind kind_;
  std::uint64_t max_line_bytes_;
  int fd_ = -1;
  std::string buffer_;
  std::size_t begin_ = 0;  // unread bytes are buffer_[begin_, end)
  std::uint64_t bytes_read_ = 0;
  bool eof_ = false;
  std::int64_t line_number_ = 0;
};

}  // namespace ftbench::io
