// The process's resident memory on the host, read from /proc/self/status, and the reset of its
// peak (Linux 4.0+: writing "5" to /proc/self/clear_refs sets the peak to the current size), so
// that each phase of a run gets a peak of its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ftbench::device {

struct HostMemory {
  std::optional<int64_t> rss_bytes;       // VmRSS: resident now
  std::optional<int64_t> peak_rss_bytes;  // VmHWM: the peak since the process started or the
                                          // last reset_host_peak_rss()
};

// Unset fields where /proc is missing or does not say.
HostMemory read_host_memory();

// Parses the text of /proc/<pid>/status.
HostMemory parse_proc_status(const std::string& text);

// Sets the process's peak resident size to its current size. False when the kernel refuses
// (no /proc, older than 4.0, a sandbox that forbids it): the peak then keeps counting from
// process start. It also lowers what getrusage(RUSAGE_SELF).ru_maxrss reports afterwards, so a
// caller that resets must keep its own whole-run maximum.
bool reset_host_peak_rss();

// The process's address-space limit (RLIMIT_AS, `ulimit -v`) in bytes; none when unlimited.
std::optional<uint64_t> address_space_limit();

// "this process's address-space limit of 830 MiB (ulimit -v 850000)", for messages.
std::string describe_address_space_limit(uint64_t bytes);

// What memory this process may have, for "out of memory under ...": the limit as above where one
// is set, else "the memory the system grants" (as ftbench-bin's guards say it too).
std::string describe_memory_limit();

// How long LibTorch may take to load under such a limit before the launcher calls it stuck
// (OpenBLAS retries a refused buffer for good): FTBENCH_LOAD_CHECK_SECONDS, 1 to 3600, default
// 30. std::invalid_argument, with the message to print, for another value.
double load_check_seconds();

}  // namespace ftbench::device
