// Board energy over a run's step loop: a sampler on the devices this process trains on, started
// just before the first step and stopped after the last one ends; or why there is none. What it
// read becomes the report's energy in the report builder (report/records.h). Used from
// the run's thread; the sampler reads on its own (energy_sampler.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device/energy_sampler.h"
#include "device/process_clock.h"
#include "device/torch/backend.h"
#include "spec/run_spec.h"

namespace ftbench::device {

class EnergyMeter {
 public:
  explicit EnergyMeter(const spec::BackendSpec& spec);

  // Starts sampling the backend's device, or records why it cannot (a CPU backend, no query
  // module, no management library). `clock` must outlive the meter.
  void start(const Backend& backend, const device::ProcessClock& clock);

  // What was read, stopping the sampler. Once.
  EnergyReadings finish();

 private:
  double interval_seconds_;
  int64_t interval_ns_;
  std::string reason_;
  std::unique_ptr<EnergySampler> sampler_;
};

}  // namespace ftbench::device
