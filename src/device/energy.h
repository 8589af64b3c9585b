// Energy of a device from timed power readings: the device's energy counter where it has one
// (differences of a cumulative counter), else board power integrated over time (trapezoids).
// Pure: the sampler (device/energy_sampler.h) collects the readings, this turns them into
// joules. docs/methodology.md ("Energy") gives the rules with worked examples.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/text/spellings.h"

namespace ftbench::device {

// One reading of one device. A failed read has neither figure.
struct PowerReading {
  int64_t nanoseconds = 0;                    // host steady clock, any origin; non-decreasing
  std::optional<int64_t> energy_millijoules;  // cumulative counter, arbitrary origin
  std::optional<int64_t> power_milliwatts;    // board power as the library reports it
};

enum class EnergyMethod { kEnergyCounter, kPowerIntegration };
inline constexpr text::Spelling<EnergyMethod> kEnergyMethodSpellings[] = {
    {EnergyMethod::kEnergyCounter, "energy_counter"},
    {EnergyMethod::kPowerIntegration, "power_integration"}};

// "energy_counter" / "power_integration": as the report names them.
const char* to_string(EnergyMethod method);

struct IntegratedEnergy {
  EnergyMethod method = EnergyMethod::kEnergyCounter;
  double joules = 0.0;
  // Time between readings that contributed energy: with the counter, between successive
  // readings that both have it (a failed read in between loses nothing: the counter went on);
  // with power, between successive readings that both have it (an interval next to a failed
  // read is not covered).
  double sampled_seconds = 0.0;
  std::optional<double> mean_watts;  // joules / sampled_seconds; unset when nothing was covered
  // Counter: the highest average over one interval between readings. Power: the highest
  // reading. So mean <= peak always holds. Unset when nothing was covered.
  std::optional<double> peak_watts;
  int64_t samples = 0;       // readings with the figure the method uses
  int64_t failed_reads = 0;  // readings without it
  // Counter only: intervals over which the counter went backwards (a wrap or a driver reset).
  // Such an interval is bridged with the power readings at its ends (a trapezoid) when both
  // have power, else it is left out of sampled_seconds.
  int64_t counter_resets = 0;
};

// Integrates readings one at a time, in time order, by one method, keeping only the last
// reading it needs: a sampler that runs for days holds a few hundred bytes per device, not every
// reading (at 100 ms, 864,000 readings a device a day).
class EnergyIntegrator {
 public:
  explicit EnergyIntegrator(EnergyMethod method);
  void add(const PowerReading& reading);
  // The figures so far (mean and peak set only when some time was covered).
  IntegratedEnergy result() const;

 private:
  IntegratedEnergy sum_;
  // The last reading with the method's figure, when there is one. Not a std::optional: g++ 12
  // takes its inlined copies for reads of uninitialised memory (-Wmaybe-uninitialized).
  PowerReading previous_{};
  bool has_previous_ = false;
};

// Integrates `readings` (in time order) by `method`. kEnergyCounter uses energy_millijoules,
// kPowerIntegration power_milliwatts. Worked example (counter): readings at 0, 0.1, 0.2 s with
// 1000, 1030, 1070 mJ -> 0.07 J over 0.2 s, mean 0.35 W, peak 0.4 W (the second interval).
// Power: 0, 0.1, 0.2 s at 300, 500, 400 W -> (300+500)/2*0.1 + (500+400)/2*0.1 = 85 J,
// mean 425 W, peak 500 W.
IntegratedEnergy integrate_energy(const std::vector<PowerReading>& readings, EnergyMethod method);

// What the sampler read from one device over the window: both integrations, kept up reading by
// reading (summarize_energy chooses), the number of readings and the first and last stamps.
struct DeviceReadings {
  int64_t index = 0;
  std::string pci_bus_id;
  std::string library;
  std::string energy_source;      // "" when the device has no counter
  std::string power_source;       // "" when it has no power reading
  int64_t readings = 0;           // readings taken, failed ones included
  int64_t first_nanoseconds = 0;  // from process start; set once `readings` > 0
  int64_t last_nanoseconds = 0;
  EnergyIntegrator by_counter{EnergyMethod::kEnergyCounter};
  EnergyIntegrator by_power{EnergyMethod::kPowerIntegration};

  void add(const PowerReading& reading);
};

}  // namespace ftbench::device
