#include "util/io/output_rules.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <regex>

#include "util/io/output_file.h"
#include "util/text/messages.h"

namespace ftbench::io {
namespace {

namespace fs = std::filesystem;

// The first `n` bytes of a regular file; "" for anything else. Opened without blocking and
// checked with fstat before reading, so a FIFO or a device is never waited on.
std::string head_of_regular_file(const std::string& path, std::size_t n) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  std::string head;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    head.resize(n);
    const ssize_t got = ::read(fd, head.data(), n);
    head.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  }
  ::close(fd);
  return head;
}

// "a report", "an event log".
std::string article(const std::string& noun) {
  // "an HTML report": the letter's sound, not the letter.
  const bool vowel = (!noun.empty() && std::string("aeiou").find(noun[0]) != std::string::npos) ||
                     noun.rfind("HTML", 0) == 0;
  return (vowel ? "an " : "a ") + noun;
}

bool same_file(const std::string& a, const std::string& b) {
  if (absolute_normal(a) == absolute_normal(b)) return true;
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec) && !ec;
}

}  // namespace

std::string ftbench_file_kind(const std::string& path) {
  const std::string head = head_of_regular_file(path, 4096);
  if (head.rfind(":::MLLOG ", 0) == 0) return "event log";
  if (head.rfind("<!DOCTYPE html>\n<!-- An ftbench HTML report", 0) == 0) return "HTML report";
  if (head.find("<testsuites name=\"ftbench gate\"") != std::string::npos) return "JUnit result";
  // The files of an export folder (run's output.adapter, output.merged): what a serving stack
  // reads, named by the folder's own layout.
  const fs::path p(path);
  const std::string name = p.filename().string();
  std::error_code ec;
  if (!head.empty() && fs::is_regular_file(p.parent_path() / "adapter_config.json", ec) &&
      (name == "adapter_config.json" || name == "adapter_model.safetensors")) {
    return "file of an exported adapter";
  }
  if (!head.empty() && fs::is_regular_file(p.parent_path() / "config.json", ec) &&
      (name == "config.json" || name.rfind("model", 0) == 0) &&
      (fs::exists(p.parent_path() / "model.safetensors", ec) ||
       fs::exists(p.parent_path() / "model.safetensors.index.json", ec))) {
    return "file of a model's weights folder";
  }
  static const std::regex schema(R"re(^\s*\{[^]*?"schema"\s*:\s*"ftbench\.([a-z_]+)/)re");
  std::smatch m;
  if (!std::regex_search(head, m, schema)) return "";
  const std::string family = m[1].str();
  if (family == "report") return "report";
  if (family == "gemm") return "gemm result";
  if (family == "logits") return "logits file";
  if (family == "gate") return "gate result";
  if (family == "checkpoint") return "checkpoint manifest";
  if (family == "segments") return "segment journal";
  return "ftbench " + family + " file";
}

void check_output_rules(const std::string& what, const std::string& path, const std::string& kind,
                        const std::vector<NamedPath>& inputs) {
  if (path.empty()) return;
  for (const NamedPath& input : inputs) {
    if (input.path.empty() || !same_file(path, input.path)) continue;
    throw OutputRefused(what + " " + text::quoted(path) + " is " + input.what + " (" +
                        text::quoted(input.path) +
                        "), which this command reads: an output is never one of its inputs, even "
                        "with --force; give the output another path");
  }
  const std::string found = ftbench_file_kind(path);
  if (!found.empty() && found != kind) {
    throw OutputRefused(what + " " + text::quoted(path) + " is an ftbench " + found + ", not " +
                        article(kind) +
                        ": an output replaces only a file of its own kind, "
                        "even with --force; give it another path");
  }
}

OutputClaim::OutputClaim(const std::string& path) {
  const fs::path p(path);
  const fs::path folder = p.has_parent_path() ? p.parent_path() : fs::path(".");
  lock_path_ = (folder / ("." + p.filename().string() + ".lock")).string();
  for (int attempt = 0; attempt < 8; ++attempt) {
    fd_ = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      // A folder that cannot take the lock file cannot take the output either: that is said by
      // the output's own checks, with the output's name.
      return;
    }
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      ::close(fd_);
      fd_ = -1;
      if (error == EWOULDBLOCK) {
        throw FileExistsError(path + ": another ftbench process is writing it now (it holds " +
                              lock_path_ + "); wait for it to end, or give this one another path");
      }
      return;
    }
    // The file locked must still be the one at the path: a holder that ended removes it, and a
    // lock on the removed file would keep nobody out.
    struct stat held {};
    struct stat named {};
    if (::fstat(fd_, &held) == 0 && ::stat(lock_path_.c_str(), &named) == 0 &&
        held.st_ino == named.st_ino && held.st_dev == named.st_dev) {
      return;
    }
    ::close(fd_);
    fd_ = -1;
  }
}

OutputClaim::~OutputClaim() {
  if (fd_ < 0) return;
  ::unlink(lock_path_.c_str());
  ::close(fd_);
}

}  // namespace ftbench::io
