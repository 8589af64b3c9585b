// The run's time origin: the moment the process started, on the steady clock.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace ftbench::device {

class ProcessClock {
 public:
  // Reads how long ago the process started from /proc/self/stat (start time in clock ticks
  // since boot, 10 ms resolution) against CLOCK_BOOTTIME; call it first thing in main(). Where
  // /proc is unavailable the launch time is taken as 0.
  static ProcessClock from_process_start();
  // A clock whose process started at `start`, `start_epoch_seconds` on the wall clock (what the
  // tests of the clock's readers set).
  static ProcessClock started_at(std::chrono::steady_clock::time_point start,
                                 double start_epoch_seconds, double launch_seconds = 0.0) {
    ProcessClock c;
    c.start_ = start;
    c.start_epoch_seconds_ = start_epoch_seconds;
    c.launch_seconds_ = launch_seconds;
    return c;
  }

  // Seconds from process start to `t`.
  double since_start(std::chrono::steady_clock::time_point t) const;
  double now() const { return since_start(std::chrono::steady_clock::now()); }
  // Seconds from process start to main() (the "launch" phase).
  double launch_seconds() const { return launch_seconds_; }
  // Process start as Unix epoch seconds.
  double start_epoch_seconds() const { return start_epoch_seconds_; }

 private:
  std::chrono::steady_clock::time_point start_;
  double launch_seconds_ = 0.0;
  double start_epoch_seconds_ = 0.0;
};

// The most an external start (`run --t0`, FTBENCH_T0: instance boot, image pull, queueing) may lie
// before the process start. Set-up takes minutes to days; a start weeks before, or before 2000,
// or after the process start, is a wrong clock or a wrong number, and would be billed. A report
// whose run began earlier than this before its process is refused (report/report_consistency.cpp).
inline constexpr double kMaxExternalStartSeconds = 30.0 * 24.0 * 3600.0;

// Why `t0_epoch_seconds` cannot be the external start of a process that started at
// `process_start_epoch_seconds` (Unix epoch seconds): "not a number", "after the process start",
// "more than 30 days before the process start"; "" when it can.
std::string external_start_problem(double t0_epoch_seconds, double process_start_epoch_seconds);

// The wall clock now, as Unix epoch seconds.
double epoch_seconds_now();

}  // namespace ftbench::device
