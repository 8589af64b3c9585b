#include "device/energy.h"

#include <algorithm>
#include <limits>

namespace ftbench::device {
namespace {

double seconds_between(const PowerReading& a, const PowerReading& b) {
  return static_cast<double>(b.nanoseconds - a.nanoseconds) * 1e-9;
}

void note_peak(IntegratedEnergy& out, double watts) {
  out.peak_watts = out.peak_watts ? std::max(*out.peak_watts, watts) : watts;
}

double trapezoid_watts(const PowerReading& a, const PowerReading& b) {
  return static_cast<double>(*a.power_milliwatts + *b.power_milliwatts) * 0.5e-3;
}

}  // namespace

const char* to_string(EnergyMethod method) {
  return text::spelling_of(kEnergyMethodSpellings, method).data();
}

EnergyIntegrator::EnergyIntegrator(EnergyMethod method) { sum_.method = method; }

void EnergyIntegrator::add(const PowerReading& r) {
  IntegratedEnergy& out = sum_;
  if (out.method == EnergyMethod::kEnergyCounter) {
    if (!r.energy_millijoules) {
      ++out.failed_reads;  // the counter went on: the next reading spans this one
      return;
    }
    ++out.samples;
    if (has_previous_) {
      const PowerReading& p = previous_;
      const double dt = seconds_between(p, r);
      if (*r.energy_millijoules >= *p.energy_millijoules) {
        const double joules =
            static_cast<double>(*r.energy_millijoules - *p.energy_millijoules) * 1e-3;
        out.joules += joules;
        out.sampled_seconds += dt;
        if (dt > 0.0) note_peak(out, joules / dt);
      } else {
        ++out.counter_resets;
        if (p.power_milliwatts && r.power_milliwatts) {
          const double watts = trapezoid_watts(p, r);
          out.joules += watts * dt;
          out.sampled_seconds += dt;
          if (dt > 0.0) note_peak(out, watts);
        }
      }
    }
    previous_ = r;
    has_previous_ = true;
    return;
  }
  if (!r.power_milliwatts) {
    ++out.failed_reads;
    has_previous_ = false;  // no interval spans a failed read
    return;
  }
  ++out.samples;
  note_peak(out, static_cast<double>(*r.power_milliwatts) * 1e-3);
  if (has_previous_) {
    const double dt = seconds_between(previous_, r);
    out.joules += trapezoid_watts(previous_, r) * dt;
    out.sampled_seconds += dt;
  }
  previous_ = r;
  has_previous_ = true;
}

IntegratedEnergy EnergyIntegrator::result() const {
  IntegratedEnergy out = sum_;
  if (out.sampled_seconds > 0.0) {
    out.mean_watts = out.joules / out.sampled_seconds;
  } else {
    out.peak_watts.reset();
  }
  return out;
}

IntegratedEnergy integrate_energy(const std::vector<PowerReading>& readings, EnergyMethod method) {
  EnergyIntegrator integrator(method);
  for (const PowerReading& r : readings) integrator.add(r);
  return integrator.result();
}

void DeviceReadings::add(const PowerReading& reading) {
  if (readings == 0) first_nanoseconds = reading.nanoseconds;
  last_nanoseconds = reading.nanoseconds;
  ++readings;
  by_counter.add(reading);
  by_power.add(reading);
}

}  // namespace ftbench::device
