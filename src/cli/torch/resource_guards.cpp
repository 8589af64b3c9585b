// ftbench-bin's own mmap() and pthread_create(): the C library's, plus guards against two kinds
// of hang under an address-space limit (ulimit -v).
//
// mmap(), through the system call. OpenBLAS retries a GEMM buffer that the system refuses (ENOMEM)
// for good, at 100 % of a core and deaf to SIGTERM, with the rest of the process waiting on it:
// under an address-space limit (ulimit -v) a run hung while LibTorch loaded (Debian 13's OpenBLAS
// 0.3.29 at 600 and 700 MB), at a thread's first GEMM (Debian 12's 0.3.21 at 850 to 1000 MB, Debian
// 13 at 800 MB) or in a later step (Debian 13 at 1100 MB), on the 2-core VM. No other code asks
// again for a mapping refused thousands of times in a row: a thread that does, for over 2 s, ends
// the process with "out of memory" (exit 3) and a line that says why; no report is written, since
// the thread that would write it is the one waiting.
//
// pthread_create(), the C library's own (dlsym RTLD_NEXT). LibTorch's pthreadpool (the
// library in Debian's LibTorch 1.13) starts its threads without looking at the result and then
// waits for all of them to say they are up: one that could not be created (EAGAIN, its stack
// refused by the limit) leaves the process deadlocked at 0 % CPU, and LibTorch makes that pool
// anew whenever an OpenMP worker first asks for its thread count, in any step (ci-tiny at
// 1,020,000 and 1,090,000 KB on Debian 12, 2-core VM). libgomp exits with "Thread creation
// failed" (status 1). A thread that such a library cannot create ends the process the same way
// as above, naming it (exit 3); every other caller (std::thread, which throws) gets the error
// as before.
//
// The executable's definitions take the place of the C library's for every library loaded
// (--export-dynamic-symbol, src/CMakeLists.txt), from the first constructor on, so this file uses
// no C++ runtime that might not be set up yet: thread-local counters, the system calls, dladdr
// and messages on the stack. The C library's own allocations (malloc) map memory internally and
// never come here. Left out of sanitizer builds, whose runtimes have their own of both.
#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "util/error.h"

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

// Writes "error: out of memory under LIMIT: WHAT; ended before ..." and ends the process (exit 3),
// LIMIT being "this process's address-space limit of 830 MiB (ulimit -v 850000)" or the memory
// the system grants.
[[noreturn]] void end_out_of_memory(const char* what) {
  char under[160] = "the memory the system grants";
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    std::snprintf(under, sizeof(under),
                  "this process's address-space limit of %llu MiB (ulimit -v %llu)",
                  static_cast<unsigned long long>(limit.rlim_cur >> 20),
                  static_cast<unsigned long long>(limit.rlim_cur >> 10));
  }
  char message[768];
  const int n = std::snprintf(message, sizeof(message),
                              "error: out of memory under %s: %s; ended before writing its output; "
                              "raise the limit, or use fewer threads (backend.threads of a run, "
                              "--threads of gemm and logits)\n",
                              under, what);
  if (n > 0) {
    const std::size_t size = std::min(static_cast<std::size_t>(n), sizeof(message) - 1);
    const ssize_t written = write(STDERR_FILENO, message, size);
    (void)written;
  }
  _exit(static_cast<int>(ftbench::ExitCode::kRunFailed));
}

[[noreturn]] void end_the_spin(std::size_t length) {
  char what[256];
  std::snprintf(what, sizeof(what),
                "a thread asked %llu times in %.1f s for a mapping (the last of %llu MiB), refused "
                "each time, and would go on for good (the BLAS library retries its buffers)",
                static_cast<unsigned long long>(refused_in_a_row), seconds_since(first_refusal),
                static_cast<unsigned long long>(length >> 20));
  end_out_of_memory(what);
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

using PthreadCreate = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

// The library a call came from: its file name without the folder, "" when unknown.
const char* library_of(const void* address) {
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  const char* slash = std::strrchr(info.dli_fname, '/');
  return slash != nullptr ? slash + 1 : info.dli_fname;
}

// Libraries that wait for good on, or exit at, a thread they could not create.
bool cannot_live_without_its_thread(const char* library) {
  return std::strstr(library, "libpthreadpool") != nullptr ||
         std::strstr(library, "libgomp") != nullptr;
}

int guarded_pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                           void* arg, const void* caller) {
  static PthreadCreate real = nullptr;
  if (real == nullptr) {
    real = reinterpret_cast<PthreadCreate>(dlsym(RTLD_NEXT, "pthread_create"));
    if (real == nullptr) return EAGAIN;
  }
  const int error = real(thread, attr, start, arg);
  if (error == 0) return 0;
  const char* library = library_of(caller);
  if (!cannot_live_without_its_thread(library)) return error;
  char what[256];
  std::snprintf(what, sizeof(what),
                "%s could not start a thread (%s), and would wait for it for good", library,
                std::strerror(error));
  end_out_of_memory(what);
}

}  // namespace

extern "C" {

int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*),
                   void* arg) noexcept {
  return guarded_pthread_create(thread, attr, start, arg, __builtin_return_address(0));
}

void* mmap(void* addr, std::size_t length, int prot, int flags, int fd, off_t offset) noexcept {
  return guarded_mmap(addr, length, prot, flags, fd, offset);
}

void* mmap64(void* addr, std::size_t length, int prot, int flags, int fd, off_t offset) noexcept {
  return guarded_mmap(addr, length, prot, flags, fd, offset);
}

}  // extern "C"

#endif  // !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
