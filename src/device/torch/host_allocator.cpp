#include "device/host_allocator.h"

#include <climits>
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace ftbench::device {
namespace {

bool user_tuned() {
  for (const char* name : {"GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                           "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

}  // namespace

void tune_host_allocator() {
#if defined(__GLIBC__)
  if (user_tuned()) return;
  // 32 MiB is the largest mmap threshold glibc accepts on 64-bit; setting it also stops the
  // threshold from adapting. Both settings are needed: an untrimmed heap alone leaves every
  // block above the default 128 KiB threshold to mmap. The top pad grows the heap in 64 MiB
  // steps rather than one brk call per new block.
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  mallopt(M_TOP_PAD, 64 * 1024 * 1024);
#endif
}

std::string host_allocator_description() {
#if defined(__GLIBC__)
  if (user_tuned()) return "glibc: user settings";
  return "glibc: mmap_threshold 32 MiB, trim_threshold 2 GiB";
#else
  return "not glibc: defaults";
#endif
}

}  // namespace ftbench::device
