#include "util/io/remove_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace ftbench::io {
namespace {

std::error_code last_error() { return {errno, std::generic_category()}; }

// Removes what is in the folder open as `dir_fd` (which this closes), depth first; adds each
// entry removed to `count`. False, with `ec` set, at the first entry that cannot be removed.
bool remove_contents(int dir_fd, std::uintmax_t& count, std::error_code& ec) {
  DIR* dir = ::fdopendir(dir_fd);
  if (dir == nullptr) {
    ec = last_error();
    ::close(dir_fd);
    return false;
  }
  const int fd = ::dirfd(dir);
  bool ok = true;
  while (ok) {
    errno = 0;
    const dirent* entry = ::readdir(dir);
    if (entry == nullptr) {
      if (errno != 0) {
        ec = last_error();
        ok = false;
      }
      break;
    }
    const char* name = entry->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    // A file, a link or anything but a folder goes with one unlinkat; Linux answers EISDIR for
    // a folder (POSIX allows EPERM).
    if (::unlinkat(fd, name, 0) == 0) {
      ++count;
      continue;
    }
    const int unlink_error = errno;
    if (unlink_error != EISDIR && unlink_error != EPERM) {
      ec = last_error();
      ok = false;
      break;
    }
    const int sub = ::openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) {
      // Not a folder after all (EPERM for a file that may not be removed: an immutable one, a
      // sticky folder's): the unlink's reason is the one to report.
      ec = (errno == ENOTDIR || errno == ELOOP)
               ? std::error_code(unlink_error, std::generic_category())
               : last_error();
      ok = false;
      break;
    }
    ok = remove_contents(sub, count, ec);
    if (ok && ::unlinkat(fd, name, AT_REMOVEDIR) != 0) {
      ec = last_error();
      ok = false;
    }
    if (ok) ++count;
  }
  ::closedir(dir);
  return ok;
}

}  // namespace

std::uintmax_t remove_tree(const std::filesystem::path& path, std::error_code& ec) noexcept {
  ec.clear();
  constexpr auto kFailed = static_cast<std::uintmax_t>(-1);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return 0;
    ec = last_error();
    return kFailed;
  }
  if (!S_ISDIR(st.st_mode)) {
    if (::unlink(path.c_str()) != 0) {
      ec = last_error();
      return kFailed;
    }
    return 1;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    ec = last_error();
    return kFailed;
  }
  std::uintmax_t count = 0;
  if (!remove_contents(fd, count, ec)) return kFailed;
  if (::rmdir(path.c_str()) != 0) {
    ec = last_error();
    return kFailed;
  }
  return count + 1;
}

std::uintmax_t remove_tree(const std::filesystem::path& path) {
  std::error_code ec;
  const std::uintmax_t removed = remove_tree(path, ec);
  if (ec) throw std::system_error(ec, "cannot remove " + path.string());
  return removed;
}

}  // namespace ftbench::io
