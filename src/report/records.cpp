#include "report/records.h"

#include <utility>

#include "report/metrics/energy_summary.h"
#include "report/metrics/memory_peaks.h"

namespace ftbench::report {

report::StepRecord step_record(const train::StepMeasurement& s, int64_t segment) {
  report::StepRecord r;
  r.step = s.step;
  r.epoch = s.epoch;
  r.wall_seconds = s.wall_seconds;
  r.data_wait_seconds = s.data_wait_seconds;
  r.real_tokens = s.real_tokens;
  r.padded_tokens = s.padded_tokens;
  r.loss_tokens = s.loss_tokens;
  r.loss = s.loss;
  r.lr = s.lr;
  r.grad_norm = s.grad_norm;
  r.model_flops = s.model_flops;
  r.segment = segment;
  return r;
}

report::Fallback fallback_record(const train::MicroBatchFallback& f) {
  return report::Fallback{f.step,
                          f.from_micro_batch_size,
                          f.from_grad_accum_steps,
                          f.to_micro_batch_size,
                          f.to_grad_accum_steps,
                          f.seconds_lost,
                          f.error};
}

train::MicroBatchFallback measured_fallback(const report::Fallback& f) {
  return train::MicroBatchFallback{f.step,
                                   f.from_micro_batch_size,
                                   f.from_grad_accum_steps,
                                   f.to_micro_batch_size,
                                   f.to_grad_accum_steps,
                                   f.seconds_lost,
                                   f.error};
}

report::HostInfo host_record(const device::HostFacts& h) {
  return report::HostInfo{h.hostname,          h.os,          h.kernel, h.cpu_model,
                          h.cpu_logical_cores, h.memory_bytes};
}

report::DeviceInfo device_record(const device::DeviceFacts& d) {
  report::DeviceInfo r;
  r.backend = d.backend;
  r.name = d.name;
  r.arch = d.arch;
  r.count = d.count;
  r.index = d.index;
  r.memory_bytes = d.memory_bytes;
  r.multiprocessor_count = d.multiprocessor_count;
  r.driver_version = d.driver_version;
  r.runtime_version = d.runtime_version;
  r.l2_cache_bytes = d.l2_cache_bytes;
  r.clock_khz = d.clock_khz;
  r.memory_clock_khz = d.memory_clock_khz;
  r.memory_bus_width_bits = d.memory_bus_width_bits;
  r.pci_bus_id = d.pci_bus_id;
  r.kernel_driver_version = d.kernel_driver_version;
  r.query_error = d.query_error;
  return r;
}

report::SoftwareInfo software_record(const device::SoftwareFacts& s) {
  report::SoftwareInfo r;
  r.ftbench_version = s.ftbench_version;
  r.git_commit = s.git_commit;
  r.libtorch_version = s.libtorch_version;
  r.compiler = s.compiler;
  r.build_type = s.build_type;
  r.intra_op_threads = s.intra_op_threads;
  r.inter_op_threads = s.inter_op_threads;
  r.blas = s.blas;
  r.omp_wait_policy = s.omp_wait_policy;
  r.host_allocator = s.host_allocator;
  r.libtorch_build = s.libtorch_build;
  r.container_image = s.container_image;
  return r;
}

report::Environment environment_record(const device::EnvironmentFacts& e) {
  report::Environment r;
  r.host = host_record(e.host);
  r.device = device_record(e.device);
  r.software = software_record(e.software);
  std::vector<report::EnvironmentVariable> variables;
  variables.reserve(e.variables.size());
  for (const auto& [name, value] : e.variables) variables.push_back({name, value});
  r.variables = std::move(variables);
  return r;
}

report::PhaseMemory phase_memory_record(const device::MemoryReading& m) {
  report::PhaseMemory r;
  r.peak_allocated_bytes = m.peak_allocated_bytes;
  r.peak_reserved_bytes = m.peak_reserved_bytes;
  r.peak_active_bytes = m.peak_active_bytes;
  r.device_used_peak_bytes = m.device_used_peak_bytes;
  r.peak_rss_bytes = m.peak_rss_bytes;
  r.rss_at_end_bytes = m.rss_at_end_bytes;
  return r;
}

report::Memory run_memory_record(const std::vector<report::Phase>& phases,
                                 std::optional<int64_t> run_peak_rss_bytes,
                                 const device::DeviceMemoryCounters& counters) {
  report::Memory m = metrics::memory_peaks_over_phases(phases);
  m.peak_rss_bytes = run_peak_rss_bytes;
  m.device_total_bytes = counters.device_total_bytes;
  m.allocation_retries = counters.allocation_retries;
  m.oom_count = counters.oom_count;
  return m;
}

report::Energy energy_record(const device::EnergyReadings& readings, int64_t segment,
                             const std::vector<report::StepRecord>& steps) {
  if (!readings.reason.empty()) {
    return metrics::unmeasured_energy(readings.reason, readings.interval_seconds, segment, steps);
  }
  return metrics::summarize_energy(readings.devices, readings.interval_seconds, segment, steps,
                                   readings.error);
}

}  // namespace ftbench::report
