#include "util/io/output_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <system_error>
#include <utility>

namespace ftbench::io {
namespace {

namespace fs = std::filesystem;

std::string errno_text(int error) { return std::strerror(error); }

[[noreturn]] void throw_exists(const std::string& path) {
  throw FileExistsError(path + " exists; pass --force to overwrite");
}

// The temporary file next to the report. Removes it on every exit that did not rename it into
// place, but only once this process has opened it, so a failed open never deletes someone
// else's file.
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (created_ && !committed_) ::unlink(path_.c_str());
  }

  const std::string& path() const { return path_; }

  // O_TRUNC rather than O_EXCL: a stale file from a killed process with the same pid (pid 1 in
  // a container, every time) must not block every later write.
  bool open() {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    created_ = fd_ >= 0;
    return created_;
  }

  int fd() const { return fd_; }

  // Closes exactly once; returns false with errno set when close() reports an error (which on
  // NFS can be the first sign of a failed write).
  bool close() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

  void commit() { committed_ = true; }

 private:
  std::string path_;
  int fd_ = -1;
  bool created_ = false;
  bool committed_ = false;
};

// Moves `from` to `to`. Without force the move itself refuses an existing destination
// (RENAME_NOREPLACE), so two runs racing for one report path cannot overwrite each other between
// the early existence check and here.
void move_into_place(const std::string& from, const std::string& to, bool force) {
#ifdef RENAME_NOREPLACE
  if (!force) {
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return;
    const int error = errno;
    if (error == EEXIST) throw_exists(to);
    // Filesystems without RENAME_NOREPLACE support answer EINVAL: fall back to check + rename.
    if (error != EINVAL && error != ENOSYS) {
      throw FileWriteError("cannot write " + to + ": rename from " + from + ": " +
                           errno_text(error));
    }
  }
#endif
  std::error_code ec;
  if (!force && fs::exists(to, ec)) throw_exists(to);
  if (::rename(from.c_str(), to.c_str()) != 0) {
    const int error = errno;
    throw FileWriteError("cannot write " + to + ": rename from " + from + ": " + errno_text(error));
  }
}

// Makes the rename itself durable. Best effort: the report is already complete and in place, so
// a failure here is not worth failing a finished run for.
void sync_directory(const fs::path& dir) {
  const std::string name = dir.empty() ? std::string(".") : dir.string();
  const int fd = ::open(name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// The errno values FTBENCH_INJECT_WRITE_FAILURE takes: what write() answers on a full disk, an
// exhausted quota, a file over the size limit and a failing device.
struct ErrnoName {
  const char* name;
  int value;
};
constexpr std::array<ErrnoName, 4> kInjectableErrors = {
    {{"ENOSPC", ENOSPC}, {"EDQUOT", EDQUOT}, {"EFBIG", EFBIG}, {"EIO", EIO}}};

[[noreturn]] void throw_bad_injection(std::string_view value, const std::string& why) {
  throw BadInput("FTBENCH_INJECT_WRITE_FAILURE: " + why +
                 "; expected ENOSPC, EDQUOT, EFBIG or EIO, optionally followed by @BYTES "
                 "(e.g. ENOSPC@4096) and preceded by report:, checkpoint: or export:, found \"" +
                 std::string(value) + "\"");
}

}  // namespace

WriteFailureInjection parse_write_failure_injection(std::string_view whole) {
  WriteFailureInjection injection;
  std::string_view value = whole;
  if (const std::size_t colon = value.find(':'); colon != std::string_view::npos) {
    injection.kind = std::string(value.substr(0, colon));
    if (injection.kind != "report" && injection.kind != "checkpoint" &&
        injection.kind != "export") {
      throw_bad_injection(whole, "unknown kind of file \"" + injection.kind + "\"");
    }
    value.remove_prefix(colon + 1);
  }
  const std::size_t at = value.find('@');
  const std::string_view name = value.substr(0, at);
  const auto known = std::find_if(kInjectableErrors.begin(), kInjectableErrors.end(),
                                  [&](const ErrnoName& e) { return name == e.name; });
  if (known == kInjectableErrors.end()) throw_bad_injection(whole, "unknown error name");
  injection.error = known->value;
  if (at != std::string_view::npos) {
    const std::string bytes(value.substr(at + 1));
    const bool digits =
        !bytes.empty() && bytes.size() <= 18 &&
        std::all_of(bytes.begin(), bytes.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) throw_bad_injection(whole, "BYTES must be a whole number of bytes");
    injection.after_bytes = std::stoull(bytes);
  }
  return injection;
}

std::optional<WriteFailureInjection> write_failure_injection_from_environment() {
  const char* value = std::getenv("FTBENCH_INJECT_WRITE_FAILURE");
  if (value == nullptr || *value == '\0') return std::nullopt;
  return parse_write_failure_injection(value);
}

bool write_all(int fd, std::string_view bytes, std::string_view kind) {
  std::optional<WriteFailureInjection> inject = write_failure_injection_from_environment();
  if (inject && !inject->kind.empty() && inject->kind != kind) inject.reset();
  // Bytes this call may still write before the injected failure.
  std::uint64_t allowed = std::numeric_limits<std::uint64_t>::max();
  if (inject) {
    const off_t offset = ::lseek(fd, 0, SEEK_CUR);  // -1 on a pipe: counts as the start
    const std::uint64_t written = offset > 0 ? static_cast<std::uint64_t>(offset) : 0;
    allowed = written >= inject->after_bytes ? 0 : inject->after_bytes - written;
  }
  const char* data = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    if (allowed == 0) {
      errno = inject->error;
      return false;
    }
    // As a full disk does: the write that crosses the limit is short, the next one fails.
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(left, allowed));
    const ssize_t n = ::write(fd, data, chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    left -= static_cast<std::size_t>(n);
    if (inject) allowed -= static_cast<std::uint64_t>(n);
  }
  return true;
}

void check_writable(const std::string& path, bool force) {
  // The temporary file's name is the longest this writer makes; past NAME_MAX (255 on Linux)
  // creating it would fail, and only after the run.
  constexpr std::size_t kMaxFileNameBytes = 255;
  const std::string name = fs::path(path).filename().string();
  const std::size_t temp_suffix_bytes =
      std::string(".tmp.").size() + std::to_string(::getpid()).size();
  if (name.size() + temp_suffix_bytes > kMaxFileNameBytes) {
    throw FileWriteError("cannot write " + path.substr(0, path.size() - name.size()) +
                         name.substr(0, 64) + "...: a file name of " + std::to_string(name.size()) +
                         " bytes; at most " +
                         std::to_string(kMaxFileNameBytes - temp_suffix_bytes) + " fit");
  }
  std::error_code ec;
  const fs::file_status link = fs::symlink_status(path, ec);
  // A link whose target is gone: the rename at the end would replace the link itself, so it is
  // "there" as far as --force is concerned (and it is said now, not after the run).
  if (fs::is_symlink(link) && !fs::exists(fs::status(path, ec)) && !force) {
    throw FileExistsError(path + " exists (a symbolic link to " +
                          fs::read_symlink(path, ec).string() +
                          ", which does not exist); pass --force to replace the link");
  }
  const fs::file_status status = fs::status(path, ec);
  if (fs::exists(status)) {
    // A folder cannot be replaced by a file even with --force; say so before a long run, not
    // after.
    if (fs::is_directory(status)) throw FileWriteError(path + " is a directory, not a report file");
    if (!force) throw_exists(path);
    // A device, FIFO or socket: the rename would replace the node itself (/dev/null made a
    // regular file), so not even --force writes over one.
    if (!fs::is_regular_file(status)) {
      throw FileWriteError(path +
                           " is not a regular file (a device, FIFO or socket); even --force does "
                           "not replace it with one");
    }
  }
  // The folder must exist (or be creatable) and be writable: the temporary file and the
  // rename both happen there.
  const fs::path parent = fs::path(path).parent_path();
  const fs::path folder = parent.empty() ? fs::path(".") : parent;
  fs::create_directories(folder, ec);
  if (ec) {
    throw FileWriteError("cannot write " + path + ": cannot create folder " + folder.string() +
                         ": " + ec.message());
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    throw FileWriteError("cannot write " + path + ": folder " + folder.string() +
                         " is not writable: " + std::strerror(errno));
  }
}

std::vector<std::string> remove_stale_temporary_files(const std::string& path) {
  std::vector<std::string> removed;
  const fs::path target(path);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string prefix = target.filename().string() + ".tmp.";
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    const auto pid = static_cast<pid_t>(std::stol(digits));
    const bool dead = ::kill(pid, 0) != 0 && errno == ESRCH;
    if ((dead || pid == ::getpid()) && entry.is_regular_file(ec) && fs::remove(entry.path(), ec)) {
      removed.push_back(entry.path().string());
    }
  }
  return removed;
}

void write_file_atomically(const std::string& text, const std::string& path, bool force) {
  check_writable(path, force);

  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ec;
    fs::create_directories(parent, ec);
    if (ec) {
      throw FileWriteError("cannot write " + path + ": cannot create folder " + parent.string() +
                           ": " + ec.message());
    }
  }

  // Same folder as the destination, so rename() stays on one filesystem and is atomic; the pid
  // keeps concurrent writers apart.
  TempFile temp(path + ".tmp." + std::to_string(::getpid()));
  auto fail = [&](const char* step) {
    const int error = errno;  // before anything below can overwrite it
    throw FileWriteError("cannot write " + path + ": " + step + " " + temp.path() + ": " +
                         errno_text(error));
  };
  if (!temp.open()) fail("cannot create");
  if (!write_all(temp.fd(), text)) fail("write");
  if (::fsync(temp.fd()) != 0) fail("fsync");
  if (!temp.close()) fail("close");
  move_into_place(temp.path(), path, force);
  temp.commit();
  sync_directory(parent);
}

fs::path absolute_normal(const std::string& path) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  const fs::path normal = (ec ? fs::path(path) : absolute).lexically_normal();
  // "/a/b/." and "/a/b/c/.." are "/a/b/": the folder, without the trailing separator.
  return normal.has_filename() || normal == normal.root_path() ? normal : normal.parent_path();
}

namespace {

// Where `path` leads, every link resolved (weakly_canonical); `path` when that fails.
fs::path resolved(const fs::path& path) {
  std::error_code ec;
  const fs::path out = fs::weakly_canonical(path, ec);
  return ec ? path : absolute_normal(out.string());
}

// Where a folder written at `folder` lands: its parent resolved, then its own name.
fs::path landing(const fs::path& folder) {
  if (!folder.has_parent_path() || folder == folder.root_path()) return folder;
  return resolved(folder.parent_path()) / folder.filename();
}

}  // namespace

bool folder_holds(const fs::path& folder, const fs::path& path) {
  return path_within(path, folder) || path_within(resolved(path), landing(folder));
}

bool folder_inside(const fs::path& folder, const fs::path& path) {
  return path_within(folder, path) || path_within(landing(folder), resolved(path));
}

bool path_within(const fs::path& inner, const fs::path& outer) {
  if (outer.empty()) return false;  // no path holds everything
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o) {
    if (o->empty()) continue;  // a trailing separator
    if (i != inner.end() && i->empty()) ++i;
    if (i == inner.end() || *i != *o) return false;
    ++i;
  }
  return true;
}

}  // namespace ftbench::io
