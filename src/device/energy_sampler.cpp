#include "device/energy_sampler.h"

#include <chrono>
#include <utility>

namespace ftbench::device {

EnergySampler::EnergySampler(const GpuQuery& query, const std::vector<int64_t>& devices,
                             int64_t interval_ns, std::function<int64_t()> now_ns)
    : query_(query), interval_ns_(interval_ns), now_ns_(std::move(now_ns)) {
  for (const int64_t index : devices) {
    const PowerSensor sensor = query.power_sensor(index);
    device::DeviceReadings d;
    d.index = index;
    d.pci_bus_id = query.device(index).pci_bus_id;
    d.library = sensor.library;
    d.energy_source = sensor.energy_source;
    d.power_source = sensor.power_source;
    devices_.push_back(std::move(d));
  }
  thread_ = std::thread([this] { loop(); });
}

EnergySampler::~EnergySampler() {
  if (!thread_.joinable()) return;
  {
    const std::lock_guard<std::mutex> guard(lock_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void EnergySampler::read_round() {
  for (device::DeviceReadings& d : devices_) {
    const PowerSample s = query_.read_power(d.index);
    device::PowerReading r;
    r.nanoseconds = now_ns_();
    if (s.error.empty()) {
      r.energy_millijoules = s.energy_millijoules;
      r.power_milliwatts = s.power_milliwatts;
    } else {
      last_error_ = s.error;
    }
    d.add(r);
  }
  rounds_.fetch_add(1);
}

void EnergySampler::loop() {
  std::unique_lock<std::mutex> guard(lock_);
  auto next = std::chrono::steady_clock::now();
  while (!stopping_) {
    guard.unlock();
    read_round();
    guard.lock();
    // A fixed schedule, not a fixed pause: a slow read does not stretch the interval after it;
    // rounds missed by a stall are skipped rather than taken back to back.
    next += std::chrono::nanoseconds(interval_ns_);
    const auto now = std::chrono::steady_clock::now();
    while (next <= now) next += std::chrono::nanoseconds(interval_ns_);
    wake_.wait_until(guard, next, [this] { return stopping_; });
  }
  if (last_round_) {
    guard.unlock();
    read_round();
  }
}

std::vector<device::DeviceReadings> EnergySampler::stop() {
  {
    const std::lock_guard<std::mutex> guard(lock_);
    stopping_ = true;
    last_round_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  return std::move(devices_);
}

}  // namespace ftbench::device
