#include "report/metrics/energy_summary.h"

#include <algorithm>
#include <limits>

namespace ftbench::metrics {

report::Energy unmeasured_energy(const std::string& reason, double interval_seconds,
                                 int64_t segment, const std::vector<report::StepRecord>& steps) {
  report::Energy e;
  e.reason = reason;
  e.interval_seconds = interval_seconds;
  e.segment = segment;
  e.steps = static_cast<int64_t>(steps.size());
  for (const report::StepRecord& s : steps) e.tokens += s.real_tokens;
  return e;
}

report::Energy summarize_energy(const std::vector<device::DeviceReadings>& devices,
                                double interval_seconds, int64_t segment,
                                const std::vector<report::StepRecord>& steps,
                                const std::string& error) {
  report::Energy e = unmeasured_energy("", interval_seconds, segment, steps);
  int64_t first = std::numeric_limits<int64_t>::max();
  int64_t last = std::numeric_limits<int64_t>::min();
  for (const device::DeviceReadings& d : devices) {
    if (d.readings == 0) continue;
    first = std::min(first, d.first_nanoseconds);
    last = std::max(last, d.last_nanoseconds);
  }
  if (first <= last) {
    e.window_start_seconds = static_cast<double>(first) * 1e-9;
    e.window_seconds = static_cast<double>(last - first) * 1e-9;
  }
  bool covered = false;
  for (const device::DeviceReadings& d : devices) {
    device::IntegratedEnergy x =
        d.energy_source.empty() ? d.by_power.result() : d.by_counter.result();
    if (x.method == device::EnergyMethod::kEnergyCounter && x.sampled_seconds == 0.0 &&
        !d.power_source.empty()) {
      const device::IntegratedEnergy by_power = d.by_power.result();
      if (by_power.sampled_seconds > 0.0) x = by_power;
    }
    covered = covered || x.sampled_seconds > 0.0;
    report::DeviceEnergy out;
    out.index = d.index;
    out.pci_bus_id = d.pci_bus_id;
    out.method = device::to_string(x.method);
    out.source =
        x.method == device::EnergyMethod::kEnergyCounter ? d.energy_source : d.power_source;
    out.library = d.library;
    out.joules = x.joules;
    out.sampled_seconds = x.sampled_seconds;
    out.mean_watts = x.mean_watts;
    out.peak_watts = x.peak_watts;
    out.samples = x.samples;
    out.failed_reads = x.failed_reads;
    out.counter_resets = x.counter_resets;
    e.devices.push_back(std::move(out));
  }
  if (!covered) {
    report::Energy none = unmeasured_energy(
        devices.empty() ? "no device to sample"
                        : "no two successive readings of a device" +
                              (error.empty() ? std::string() : " (last error: " + error + ")"),
        interval_seconds, segment, steps);
    none.window_start_seconds = e.window_start_seconds;
    none.window_seconds = e.window_seconds;
    return none;
  }
  std::vector<std::string> sources;
  for (const report::DeviceEnergy& d : e.devices) {
    e.sample_count += d.samples;
    if (std::find(sources.begin(), sources.end(), d.source) == sources.end()) {
      sources.push_back(d.source);
    }
    e.method = e.method.empty() || e.method == d.method ? d.method : "mixed";
  }
  for (const std::string& s : sources) e.source += (e.source.empty() ? "" : ", ") + s;
  const report::DeviceEnergyTotals totals = report::sum_device_energy(e.devices);
  const double joules = totals.joules;
  e.joules = joules;
  e.mean_watts = totals.mean_watts;
  e.peak_watts = totals.peak_watts;
  e.sampled_seconds = totals.least_sampled_seconds;
  if (e.window_seconds > 0.0) e.coverage = totals.least_sampled_seconds / e.window_seconds;
  if (e.steps > 0) e.joules_per_step = joules / static_cast<double>(e.steps);
  if (e.tokens > 0) e.joules_per_million_tokens = joules / static_cast<double>(e.tokens) * 1e6;
  return e;
}

}  // namespace ftbench::metrics
