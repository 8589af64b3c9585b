#include "ftbench/device/host_memory.h"

#include <cstdio>
#include <fstream>
#include <sstream>

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

}  // namespace ftbench::device
