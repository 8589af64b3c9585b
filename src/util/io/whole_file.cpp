#include "util/io/whole_file.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "util/error.h"

namespace ftbench::io {
namespace {

constexpr std::size_t kChunkBytes = std::size_t{1} << 16;

std::string errno_text(int error) { return std::strerror(error); }

// What a file of type `mode` is, for a refusal; "" for the types that can be read.
std::string unreadable_type(mode_t mode) {
  if (S_ISREG(mode) || S_ISFIFO(mode)) return "";
  if (S_ISDIR(mode)) return errno_text(EISDIR);
  if (S_ISCHR(mode)) return "a character device (such as /dev/zero or a terminal), not a file";
  if (S_ISBLK(mode)) return "a block device, not a file";
  if (S_ISSOCK(mode)) return "a socket, not a file";
  return "not a regular file";
}

// A FIFO opened without blocking: waits (at most kFifoWriterWaitSeconds, in slices a signal
// cannot stretch) until a writer has written or come and gone, then makes reads block again.
// A FIFO nobody writes to is refused rather than waited on for good. Linux's poll() reports
// neither POLLIN nor POLLHUP on a FIFO that no writer has opened since this open.
constexpr int kFifoWriterWaitSeconds = 10;

std::atomic<StopRequested> g_stop_requested{nullptr};

void wait_for_a_writer(int fd, const std::string& path) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(kFifoWriterWaitSeconds);
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, 100);
    if (ready > 0) break;
    if (const StopRequested stop = g_stop_requested.load(); stop != nullptr && stop()) {
      ::close(fd);
      throw InterruptedRun(path +
                           ": stopped by a signal while waiting for the FIFO's writer; nothing "
                           "was run");
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::close(fd);
      throw FileReadError(path, fmt::format("a FIFO that no process wrote to within {} s: "
                                            "nothing to read (give a regular file, or start "
                                            "its writer first)",
                                            kFifoWriterWaitSeconds));
    }
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
}

std::string too_large(const FileKind& kind, const std::string& found) {
  return fmt::format("{}; a {} holds at most {}", found, kind.name, format_limit(kind.max_bytes));
}

// Reads what the descriptor gives, into `out`, until the end or until more than `max_bytes` are
// in `out`; the errno of a failed read, else 0.
int read_into(int fd, std::string& out, std::uint64_t max_bytes) {
  char buffer[kChunkBytes];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return 0;
    out.append(buffer, static_cast<std::size_t>(n));
    if (out.size() > max_bytes) return 0;
  }
}

}  // namespace

void set_stop_requested(StopRequested check) { g_stop_requested.store(check); }

FileReadError::FileReadError(std::string path, std::string reason)
    : BadInput(path + ": " + reason), path_(std::move(path)), reason_(std::move(reason)) {}

std::string format_limit(std::uint64_t bytes) {
  if (bytes >= kGiB && bytes % (kGiB / 2) == 0) {
    return fmt::format("{:g} GiB", static_cast<double>(bytes) / static_cast<double>(kGiB));
  }
  if (bytes >= kMiB && bytes % kMiB == 0) return fmt::format("{} MiB", bytes / kMiB);
  return fmt::format("{} bytes", bytes);
}

int open_for_reading(const std::string& path, const FileKind& kind, std::uint64_t& regular_bytes) {
  regular_bytes = 0;
  struct stat st {};
  // The type first, from the path: opening a device may have effects of its own.
  if (::stat(path.c_str(), &st) != 0) throw FileReadError(path, errno_text(errno));
  if (const std::string why = unreadable_type(st.st_mode); !why.empty()) {
    throw FileReadError(path, why);
  }
  // Without blocking: a FIFO put in the file's place after the stat above would otherwise wait
  // for a writer that may never come (and no signal handler could end that wait).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw FileReadError(path, errno_text(errno));
  // Again on what was opened: the path may have changed in between.
  if (::fstat(fd, &st) != 0 || !unreadable_type(st.st_mode).empty()) {
    const int error = errno;
    ::close(fd);
    throw FileReadError(path, unreadable_type(st.st_mode).empty() ? errno_text(error)
                                                                  : unreadable_type(st.st_mode));
  }
  if (S_ISFIFO(st.st_mode)) wait_for_a_writer(fd, path);
  if (S_ISREG(st.st_mode)) {
    regular_bytes = static_cast<std::uint64_t>(st.st_size);
    if (regular_bytes > kind.max_bytes) {
      ::close(fd);
      throw FileReadError(path, too_large(kind, fmt::format("{} bytes", regular_bytes)));
    }
  }
  return fd;
}

std::string read_whole_file(const std::string& path, const FileKind& kind) {
  std::uint64_t size = 0;
  const int fd = open_for_reading(path, kind, size);
  std::string text;
  text.reserve(static_cast<std::size_t>(size));
  const int error = read_into(fd, text, kind.max_bytes);
  ::close(fd);
  if (error != 0) throw FileReadError(path, errno_text(error));
  // A pipe, or a file that grew while it was read.
  if (text.size() > kind.max_bytes) {
    throw FileReadError(path, too_large(kind, fmt::format("more than {} (a stream that does not "
                                                          "end?)",
                                                          format_limit(kind.max_bytes))));
  }
  return text;
}

LineReader::LineReader(const std::string& path, const FileKind& kind, std::uint64_t max_line_bytes)
    : path_(path), kind_(kind), max_line_bytes_(max_line_bytes) {
  std::uint64_t size = 0;
  fd_ = open_for_reading(path, kind, size);
}

LineReader::~LineReader() {
  if (fd_ >= 0) ::close(fd_);
}

bool LineReader::fill() {
  if (eof_) return false;
  if (begin_ > 0) {
    buffer_.erase(0, begin_);
    begin_ = 0;
  }
  const std::size_t before = buffer_.size();
  buffer_.resize(before + kChunkBytes);
  ssize_t n = 0;
  do {
    n = ::read(fd_, buffer_.data() + before, kChunkBytes);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    const int error = errno;
    buffer_.resize(before);
    throw FileReadError(
        path_, fmt::format("cannot read after line {}: {}", line_number_, errno_text(error)));
  }
  buffer_.resize(before + static_cast<std::size_t>(n));
  bytes_read_ += static_cast<std::uint64_t>(n);
  if (bytes_read_ > kind_.max_bytes) {
    throw FileReadError(path_, too_large(kind_, fmt::format("more than {} (a stream that does not "
                                                            "end?)",
                                                            format_limit(kind_.max_bytes))));
  }
  if (n == 0) eof_ = true;
  return n > 0;
}

bool LineReader::next(std::string& line) {
  const auto too_long = [&] {
    return FileReadError(path_,
                         fmt::format("line {} is longer than {}; a line of a {} holds at "
                                     "most that",
                                     line_number_ + 1, format_limit(max_line_bytes_), kind_.name));
  };
  std::size_t searched = begin_;
  for (;;) {
    const std::size_t newline = buffer_.find('\n', searched);
    if (newline != std::string::npos) {
      if (newline - begin_ > max_line_bytes_) throw too_long();
      line.assign(buffer_, begin_, newline - begin_);
      begin_ = newline + 1;
      ++line_number_;
      return true;
    }
    if (buffer_.size() - begin_ > max_line_bytes_) throw too_long();
    searched = buffer_.size() - begin_;  // fill() moves the unread bytes to the front
    if (!fill()) break;
    searched = std::min(searched, buffer_.size());
  }
  if (begin_ >= buffer_.size()) return false;
  if (buffer_.size() - begin_ > max_line_bytes_) throw too_long();
  line.assign(buffer_, begin_, std::string::npos);
  begin_ = buffer_.size();
  ++line_number_;
  return true;
}

std::string_view LineReader::peek() {
  while (!eof_ && buffer_.size() - begin_ < kChunkBytes) {
    if (!fill()) break;
  }
  return std::string_view(buffer_).substr(begin_, kChunkBytes);
}

std::string LineReader::rest(const FileKind& kind) {
  std::string out = buffer_.substr(begin_);
  begin_ = buffer_.size();
  if (!eof_) {
    const int error = read_into(fd_, out, kind.max_bytes);
    if (error != 0) throw FileReadError(path_, errno_text(error));
    eof_ = true;
  }
  if (out.size() > kind.max_bytes) {
    throw FileReadError(path_,
                        too_large(kind, fmt::format("more than {}", format_limit(kind.max_bytes))));
  }
  return out;
}

}  // namespace ftbench::io
