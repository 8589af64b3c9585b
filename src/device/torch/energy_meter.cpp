#include "device/torch/energy_meter.h"

#include <cmath>

#include <spdlog/spdlog.h>

namespace ftbench::device {

EnergyMeter::EnergyMeter(const spec::BackendSpec& spec)
    : interval_seconds_(static_cast<double>(spec.energy_sample_ms) * 1e-3),
      interval_ns_(spec.energy_sample_ms * 1'000'000) {}

void EnergyMeter::start(const Backend& backend, const device::ProcessClock& clock) {
  const GpuQuery* query = backend.gpu_query();
  if (backend.kind() == "cpu") {
    reason_ = "backend cpu: ftbench reads the board power of GPUs only";
  } else if (query == nullptr) {
    reason_ = "no GPU query module: " + backend.info().query_error;
  } else {
    try {
      sampler_ = std::make_unique<EnergySampler>(
          *query, std::vector<int64_t>{backend.info().index}, interval_ns_,
          [&clock] { return static_cast<int64_t>(std::llround(clock.now() * 1e9)); });
    } catch (const GpuQueryError& e) {
      reason_ = e.what();
      spdlog::warn("no energy figures: {}", reason_);
    }
  }
}

EnergyReadings EnergyMeter::finish() {
  EnergyReadings out;
  out.interval_seconds = interval_seconds_;
  if (sampler_ == nullptr) {
    out.reason = reason_.empty() ? "training did not start" : reason_;
    return out;
  }
  out.devices = sampler_->stop();
  out.error = sampler_->last_error();
  sampler_.reset();
  return out;
}

}  // namespace ftbench::device
