// Board power and energy of the devices a process trains on, read on a background thread
// through the GPU query module's power sensor (device/gpu_query.h: NVML, AMD SMI) at a fixed
// interval. The readings become the report's energy in the report builder
// (report/records.h, through metrics::summarize_energy).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "device/energy.h"
#include "device/gpu_query.h"

namespace ftbench::device {

class EnergySampler {
 public:
  // Opens every device's sensor on the calling thread (throws GpuQueryError with the library's
  // reason when one cannot be opened), then starts the thread, which reads every device at
  // once, then every `interval_ns` until stop(). `now_ns` is the clock readings are stamped
  // with (nanoseconds from process start), called on the sampler's thread only. `query` must
  // outlive the sampler; while it runs, the other thread may make every other call of `query`
  // (read_power is the one call the module allows from a second thread).
  EnergySampler(const GpuQuery& query, const std::vector<int64_t>& devices, int64_t interval_ns,
                std::function<int64_t()> now_ns);
  ~EnergySampler();  // stops the thread without a last reading when stop() was not called
  EnergySampler(const EnergySampler&) = delete;
  EnergySampler& operator=(const EnergySampler&) = delete;

  // Rounds of readings taken so far (every device once a round). Thread-safe.
  int64_t rounds() const { return rounds_.load(); }

  // Takes one last round, stops the thread and returns every device's readings, integrated
  // as they came (device::DeviceReadings keeps no list of them). Once.
  std::vector<device::DeviceReadings> stop();
  // The last failed read's message ("" when none failed). After stop().
  const std::string& last_error() const { return last_error_; }

 private:
  void loop();
  void read_round();

  const GpuQuery& query_;
  int64_t interval_ns_;
  std::function<int64_t()> now_ns_;
  std::vector<device::DeviceReadings> devices_;  // written by the thread until it is joined
  std::string last_error_;                       // likewise
  std::atomic<int64_t> rounds_{0};
  std::mutex lock_;
  std::condition_variable wake_;
  bool stopping_ = false;    // guarded by lock_
  bool last_round_ = false;  // guarded by lock_: take a round before the thread ends
  std::thread thread_;
};

// What an energy meter (torch/energy_meter.h) read over a run's step loop, or why it read
// nothing; the report builder turns it into the report's energy.
struct EnergyReadings {
  std::vector<device::DeviceReadings> devices;  // each device sampled; empty when none was
  std::string reason;                           // why it did not run; "" when it did
  std::string error;                            // the last failed read's message, when one failed
  double interval_seconds = 0.0;                // backend.energy_sample_ms / 1000
};

}  // namespace ftbench::device
