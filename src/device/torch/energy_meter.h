// Board energy over a run's step loop (report::Energy): a sampler on the devices this process
// trains on, started just before the first step and stopped after the last one ends; or why
// there is none. Used from the run's thread; the sampler reads on its own (energy_sampler.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device/energy_sampler.h"
#include "device/torch/backend.h"
#include "metrics/process_clock.h"
#include "report/report.h"
#include "spec/run_spec.h"

namespace ftbench::device {

class EnergyMeter {
 public:
  // `segment`: the index of this process's segment of the run.
  EnergyMeter(const spec::BackendSpec& spec, int64_t segment);

  // Starts sampling the backend's device, or records why it cannot (a CPU backend, no query
  // module, no management library). `clock` must outlive the meter.
  void start(const Backend& backend, const metrics::ProcessClock& clock);

  // The energy of `steps` (this segment's), stopping the sampler. Once.
  report::Energy finish(const std::vector<report::StepRecord>& steps);

 private:
  double interval_seconds_;
  int64_t interval_ns_;
  int64_t segment_;
  std::string reason_;
  std::unique_ptr<EnergySampler> sampler_;
};

}  // namespace ftbench::device
