// Tuning of the C library allocator for the training loop on the host.
#pragma once

#include <string>

namespace ftbench::device {

// glibc gives large freed blocks back to the kernel (munmap, heap trimming), so each training
// step faults its activations in again, and every unmap interrupts the other cores' threads.
// On the 2-core CI machine the cpu-bench step took 0.50-0.55 s without this and 0.32-0.37 s
// with it (docs/benchmarks.md). This keeps blocks up to 32 MiB on the heap and the heap untrimmed,
// as LibTorch's GPU caching allocator does for device memory. Skipped when the user set glibc's own
// MALLOC_* or GLIBC_TUNABLES variables. Call once, first thing in main().
void tune_host_allocator();

// What tune_host_allocator() did, for the report: e.g. "glibc: mmap_threshold 32 MiB,
// trim_threshold 2 GiB", "glibc: user settings", or "not glibc".
std::string host_allocator_description();

}  // namespace ftbench::device
