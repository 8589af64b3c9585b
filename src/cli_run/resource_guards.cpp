// ftbench-bin's own mmap(): the C library's, through the system call, plus a guard against one
// kind of hang. OpenBLAS retries a GEMM buffer that the system refuses (ENOMEM) for good, at 100 %
// of a core and deaf to SIGTERM, with the rest of the process waiting on it: under an
// address-space limit (ulimit -v) a run hung while LibTorch loaded (Debian 13's OpenBLAS 0.3.29
// at 600 and 700 MB), at a thread's first GEMM (Debian 12's 0.3.21 at 850 to 1000 MB, Debian 13 at
// 800 MB) or in a later step (Debian 13 at 1100 MB), on the 2-core VM. No other code asks again
// for a mapping refused thousands of times in a row: a thread that does, for over 2 s, ends the
// process with "out of memory" (exit 3) and a line that says why; no report is written, since
// the thread that would write it is the one waiting.
//
// The executable's definition takes the place of the C library's for every library loaded
// (--export-dynamic-symbol, src/CMakeLists.txt), from the first constructor on, so this file uses
// no C++ runtime that might not be set up yet: thread-local counters, the system calls and a
// message on the stack. The C library's own allocations (malloc) map memory internally and never
// come here. Left out of sanitizer builds, whose runtime has an mmap() of its own.
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "ftbench/error.h"

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)

namespace {

// A thread's refusals in a row, and when the first of them was.
thread_local uint64_t refused_in_a_row = 0;
thread_local timespec first_refusal{};

constexpr uint64_t kRefusalsThatSpin = 10000;
constexpr double kSecondsThatSpin = 2.0;

double seconds_since(const timespec& start) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec - start.tv_sec) +
         static_cast<double>(now.tv_nsec - start.tv_nsec) * 1e-9;
}

[[noreturn]] void end_the_spin(std::size_t length) {
  char under[160] = "the memory the system grants";
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    std::snprintf(under, sizeof(under),
                  "this process's address-space limit of %llu MiB (ulimit -v %llu)",
                  static_cast<unsigned long long>(limit.rlim_cur >> 20),
                  static_cast<unsigned long long>(limit.rlim_cur >> 10));
  }
  char message[640];
  const int n = std::snprintf(
      message, sizeof(message),
      "error: out of memory: a thread asked %llu times in %.1f s for a mapping (the last of %llu "
      "MiB) that %s refuses, and would go on for good (the BLAS library retries its buffers); "
      "ended with no report; raise the limit, or lower backend.threads\n",
      static_cast<unsigned long long>(refused_in_a_row), seconds_since(first_refusal),
      static_cast<unsigned long long>(length >> 20), under);
  if (n > 0) {
    const std::size_t size = static_cast<std::size_t>(n) < sizeof(message)
                                 ? static_cast<std::size_t>(n)
                                 : sizeof(message) - 1;
    const ssize_t written = write(STDERR_FILENO, message, size);
    (void)written;
  }
  _exit(static_cast<int>(ftbench::ExitCode::kRunFailed));
}

void* guarded_mmap(void* addr, std::size_t length, int prot, int flags, int fd, off_t offset) {
  const long r = syscall(SYS_mmap, addr, length, prot, flags, fd, offset);
  if (r != -1) {
    refused_in_a_row = 0;
    return reinterpret_cast<void*>(r);
  }
  if (errno == ENOMEM) {
    if (refused_in_a_row++ == 0) clock_gettime(CLOCK_MONOTONIC, &first_refusal);
    if (refused_in_a_row >= kRefusalsThatSpin && seconds_since(first_refusal) >= kSecondsThatSpin) {
      end_the_spin(length);
    }
  }
  return MAP_FAILED;
}

}  // namespace

extern "C" {

void* mmap(void* addr, std::size_t length, int prot, int flags, int fd, off_t offset) noexcept {
  return guarded_mmap(addr, length, prot, flags, fd, offset);
}

void* mmap64(void* addr, std::size_t length, int prot, int flags, int fd, off_t offset) noexcept {
  return guarded_mmap(addr, length, prot, flags, fd, offset);
}

}  // extern "C"

#endif  // !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
