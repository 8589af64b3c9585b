// The phases of a run, one after the other on the process clock.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "device/process_clock.h"
#include "device/torch/memory_meter.h"
#include "report/measurements.h"

namespace ftbench::run {

// Records consecutive phases against the process clock, with the memory of each once a meter
// is attached.
class PhaseTimer {
 public:
  PhaseTimer(const device::ProcessClock& clock, std::vector<report::TimedPhase>& phases,
             double start_seconds)
      : clock_(clock), phases_(phases), last_(start_seconds) {}
  void measure_memory(device::MemoryMeter* meter) { meter_ = meter; }
  // Called after each phase is recorded (the segment journal's heartbeat).
  void after_each_phase(std::function<void()> f) { after_ = std::move(f); }
  void end(const std::string& name) { end_at(name, clock_.now()); }
  void end_at(const std::string& name, double at_seconds) {
    phases_.push_back({name, last_, at_seconds - last_});
    if (meter_ != nullptr) phases_.back().memory = meter_->end_phase();
    last_ = at_seconds;
    if (after_) after_();
  }

 private:
  const device::ProcessClock& clock_;
  std::vector<report::TimedPhase>& phases_;
  double last_;
  device::MemoryMeter* meter_ = nullptr;
  std::function<void()> after_;
};

}  // namespace ftbench::run
