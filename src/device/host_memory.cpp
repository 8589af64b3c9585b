#include "device/host_memory.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "util/text/messages.h"
#include "util/text/parse_number.h"

namespace ftbench::device {
namespace {

// "VmRSS:\t  207856 kB" -> 207856 * 1024.
std::optional<int64_t> kilobytes_field(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(key + ":", 0) != 0) continue;
    std::istringstream fields(line.substr(key.size() + 1));
    int64_t kb = 0;
    std::string unit;
    if (!(fields >> kb >> unit) || unit != "kB" || kb < 0) return std::nullopt;
    return kb * 1024;
  }
  return std::nullopt;
}

}  // namespace

HostMemory parse_proc_status(const std::string& text) {
  return {kilobytes_field(text, "VmRSS"), kilobytes_field(text, "VmHWM")};
}

HostMemory read_host_memory() {
  std::ifstream in("/proc/self/status");
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_proc_status(ss.str());
}

bool reset_host_peak_rss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return false;
  const bool written = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && written;
}

std::optional<uint64_t> address_space_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<uint64_t>(limit.rlim_cur);
}

std::string describe_address_space_limit(uint64_t bytes) {
  return fmt::format("this process's address-space limit of {} MiB (ulimit -v {})", bytes >> 20,
                     bytes >> 10);
}

std::string describe_memory_limit() {
  const std::optional<uint64_t> limit = address_space_limit();
  return limit ? describe_address_space_limit(*limit) : "the memory the system grants";
}

double load_check_seconds() {
  const char* s = std::getenv("FTBENCH_LOAD_CHECK_SECONDS");
  if (s == nullptr) return 30.0;
  double seconds = 0.0;
  if (text::parse_double(s, seconds) != std::errc{} || !(seconds >= 1.0 && seconds <= 3600.0)) {
    throw std::invalid_argument(
        fmt::format("FTBENCH_LOAD_CHECK_SECONDS={}: expected a number of seconds from 1 to 3600",
                    text::quoted(s)));
  }
  return seconds;
}

}  // namespace ftbench::device
