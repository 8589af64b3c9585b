#include "device/process_clock.h"

#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace ftbench::device {
namespace {

// Seconds between boot and the start of this process, or nullopt.
std::optional<double> process_start_since_boot() {
  std::ifstream in("/proc/self/stat");
  std::string stat;
  if (!std::getline(in, stat)) return std::nullopt;
  // The command name (field 2) may contain spaces; fields restart after the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  // Field 22 (starttime); `rest` begins at field 3.
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return std::nullopt;
  }
  const long ticks = sysconf(_SC_CLK_TCK);
  if (ticks <= 0) return std::nullopt;
  return std::stod(field) / double(ticks);
}

}  // namespace

ProcessClock ProcessClock::from_process_start() {
  ProcessClock c;
  const auto steady_now = std::chrono::steady_clock::now();
  const double epoch_now = epoch_seconds_now();
  timespec boot{};
  const std::optional<double> start = process_start_since_boot();
  if (start && clock_gettime(CLOCK_BOOTTIME, &boot) == 0) {
    const double boot_now = double(boot.tv_sec) + double(boot.tv_nsec) * 1e-9;
    c.launch_seconds_ = std::max(0.0, boot_now - *start);
  }
  c.start_ = steady_now - std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(c.launch_seconds_));
  c.start_epoch_seconds_ = epoch_now - c.launch_seconds_;
  return c;
}

double ProcessClock::since_start(std::chrono::steady_clock::time_point t) const {
  return std::chrono::duration<double>(t - start_).count();
}

std::string external_start_problem(double t0, double process_start) {
  if (!std::isfinite(t0)) return "not a finite number";
  if (t0 > process_start) return "after the process start";
  if (process_start - t0 > kMaxExternalStartSeconds) {
    return "more than 30 days before the process start";
  }
  return "";
}

double epoch_seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace ftbench::device
