#include "device/energy.h"

#include <gtest/gtest.h>

namespace ftbench::device {
namespace {

constexpr int64_t kMs = 1'000'000;  // nanoseconds

PowerReading counter(int64_t ms, int64_t mj, std::optional<int64_t> mw = std::nullopt) {
  return {ms * kMs, mj, mw};
}
PowerReading power(int64_t ms, int64_t mw) { return {ms * kMs, std::nullopt, mw}; }
PowerReading failed(int64_t ms) { return {ms * kMs, std::nullopt, std::nullopt}; }

TEST(Energy, CounterDifferences) {
  // The header's worked example.
  const IntegratedEnergy e = integrate_energy(
      {counter(0, 1000), counter(100, 1030), counter(200, 1070)}, EnergyMethod::kEnergyCounter);
  EXPECT_EQ(e.method, EnergyMethod::kEnergyCounter);
  EXPECT_DOUBLE_EQ(e.joules, 0.07);
  EXPECT_DOUBLE_EQ(e.sampled_seconds, 0.2);
  EXPECT_DOUBLE_EQ(*e.mean_watts, 0.35);
  EXPECT_DOUBLE_EQ(*e.peak_watts, 0.4);
  EXPECT_EQ(e.samples, 3);
  EXPECT_EQ(e.failed_reads, 0);
  EXPECT_EQ(e.counter_resets, 0);
}

TEST(Energy, CounterAtTrainingScale) {
  // 700 W for 2 s read every 0.5 s: 350 J a read, 1400 J in all.
  const IntegratedEnergy e =
      integrate_energy({counter(0, 5'000'000), counter(500, 5'350'000), counter(1000, 5'700'000),
                        counter(1500, 6'050'000), counter(2000, 6'400'000)},
                       EnergyMethod::kEnergyCounter);
  EXPECT_EQ(e.joules, 1400.0);
  EXPECT_EQ(e.sampled_seconds, 2.0);
  EXPECT_EQ(*e.mean_watts, 700.0);
  EXPECT_EQ(*e.peak_watts, 700.0);
}

TEST(Energy, CounterSpansAFailedRead) {
  // The counter kept counting while a read failed: the interval 0 -> 200 ms is whole.
  const IntegratedEnergy e =
      integrate_energy({counter(0, 0), failed(100), counter(200, 100'000), counter(300, 140'000)},
                       EnergyMethod::kEnergyCounter);
  EXPECT_EQ(e.joules, 140.0);
  EXPECT_DOUBLE_EQ(e.sampled_seconds, 0.3);
  EXPECT_EQ(e.samples, 3);
  EXPECT_EQ(e.failed_reads, 1);
  EXPECT_DOUBLE_EQ(*e.peak_watts, 500.0);  // 100 J over 0.2 s
}

TEST(Energy, CounterResetIsBridgedByPower) {
  // The counter went back (driver reload or wrap) between 100 and 200 ms: that interval is
  // the trapezoid of the power readings at its ends, (400 + 600) / 2 W x 0.1 s = 50 J.
  const IntegratedEnergy e =
      integrate_energy({counter(0, 10'000, 400'000), counter(100, 50'000, 400'000),
                        counter(200, 2'000, 600'000), counter(300, 62'000, 600'000)},
                       EnergyMethod::kEnergyCounter);
  EXPECT_EQ(e.counter_resets, 1);
  EXPECT_DOUBLE_EQ(e.joules, 40.0 + 50.0 + 60.0);
  EXPECT_DOUBLE_EQ(e.sampled_seconds, 0.3);
  EXPECT_DOUBLE_EQ(*e.peak_watts, 600.0);
  EXPECT_DOUBLE_EQ(*e.mean_watts, 500.0);
}

TEST(Energy, CounterResetWithoutPowerIsNotCovered) {
  const IntegratedEnergy e = integrate_energy(
      {counter(0, 10'000), counter(100, 50'000), counter(200, 2'000), counter(300, 62'000)},
      EnergyMethod::kEnergyCounter);
  EXPECT_EQ(e.counter_resets, 1);
  EXPECT_DOUBLE_EQ(e.joules, 100.0);
  EXPECT_DOUBLE_EQ(e.sampled_seconds, 0.2);  // 100 -> 200 ms left out
  EXPECT_DOUBLE_EQ(*e.mean_watts, 500.0);
}

TEST(Energy, PowerTrapezoids) {
  // The header's worked example.
  const IntegratedEnergy e =
      integrate_energy({power(0, 300'000), power(100, 500'000), power(200, 400'000)},
                       EnergyMethod::kPowerIntegration);
  EXPECT_EQ(e.method, EnergyMethod::kPowerIntegration);
  EXPECT_DOUBLE_EQ(e.joules, 85.0);
  EXPECT_DOUBLE_EQ(e.sampled_seconds, 0.2);
  EXPECT_DOUBLE_EQ(*e.mean_watts, 425.0);
  EXPECT_DOUBLE_EQ(*e.peak_watts, 500.0);
  EXPECT_EQ(e.samples, 3);
}

TEST(Energy, PowerIntervalsNextToAFailedReadAreLeftOut) {
  // 0-100 ms covered, 100-200 and 200-300 ms not (the read at 200 failed), 300-400 covered.
  const IntegratedEnergy e = integrate_energy({power(0, 200'000), power(100, 200'000), failed(200),
                                               power(300, 300'000), power(400, 300'000)},
                                              EnergyMethod::kPowerIntegration);
  EXPECT_DOUBLE_EQ(e.joules, 20.0 + 30.0);
  EXPECT_DOUBLE_EQ(e.sampled_seconds, 0.2);
  EXPECT_EQ(e.samples, 4);
  EXPECT_EQ(e.failed_reads, 1);
  EXPECT_DOUBLE_EQ(*e.mean_watts, 250.0);
  EXPECT_DOUBLE_EQ(*e.peak_watts, 300.0);
}

TEST(Energy, NothingCoveredHasNoWatts) {
  for (EnergyMethod m : {EnergyMethod::kEnergyCounter, EnergyMethod::kPowerIntegration}) {
    const IntegratedEnergy none = integrate_energy({}, m);
    EXPECT_EQ(none.joules, 0.0);
    EXPECT_FALSE(none.mean_watts.has_value());
    EXPECT_FALSE(none.peak_watts.has_value());
    const IntegratedEnergy one = integrate_energy({counter(0, 5, 100'000)}, m);
    EXPECT_EQ(one.samples, 1);
    EXPECT_EQ(one.sampled_seconds, 0.0);
    EXPECT_FALSE(one.mean_watts.has_value());
    EXPECT_FALSE(one.peak_watts.has_value());
  }
  const IntegratedEnergy all_failed =
      integrate_energy({failed(0), failed(100)}, EnergyMethod::kPowerIntegration);
  EXPECT_EQ(all_failed.failed_reads, 2);
  EXPECT_EQ(all_failed.samples, 0);
}

TEST(Energy, ResultsCanBeReadWhileReadingsKeepComing) {
  // The sampler reads result() only at the end, but the integrator holds no reading it would
  // need again: the figures after each reading are those of the readings so far.
  EnergyIntegrator by_power(EnergyMethod::kPowerIntegration);
  by_power.add(power(0, 300'000));
  by_power.add(power(100, 500'000));
  EXPECT_DOUBLE_EQ(by_power.result().joules, 40.0);
  by_power.add(power(200, 400'000));
  const IntegratedEnergy e = by_power.result();
  EXPECT_DOUBLE_EQ(e.joules, 85.0);  // the header's worked example
  EXPECT_DOUBLE_EQ(*e.mean_watts, 425.0);
  EXPECT_DOUBLE_EQ(*e.peak_watts, 500.0);
  EXPECT_EQ(e.samples, 3);
}

TEST(Energy, ADayOfReadingsKeepsNoReadings) {
  // A day at the default 100 ms: 864,001 readings of a 500 W board, 50 J between two. The
  // device's figures stay a fixed size (DeviceReadings holds two integrators, not a list), and
  // the sums keep their precision: joules are sums of whole numbers, exact in a double; the
  // time is 864,000 sums of 0.1 s, within 1e-9 relative of a day.
  DeviceReadings d;
  const int64_t n = 864'001;
  for (int64_t i = 0; i < n; ++i) {
    d.add({i * 100 * kMs, 7'000'000 + i * 50'000, 500'000});
  }
  EXPECT_EQ(d.readings, n);
  EXPECT_EQ(d.first_nanoseconds, 0);
  EXPECT_EQ(d.last_nanoseconds, (n - 1) * 100 * kMs);
  const IntegratedEnergy counter = d.by_counter.result();
  EXPECT_EQ(counter.joules, 43'200'000.0);
  EXPECT_NEAR(counter.sampled_seconds, 86'400.0, 86'400.0 * 1e-9);
  EXPECT_NEAR(*counter.mean_watts, 500.0, 500.0 * 1e-9);
  EXPECT_EQ(counter.samples, n);
  const IntegratedEnergy by_power = d.by_power.result();
  EXPECT_NEAR(by_power.joules, 43'200'000.0, 43'200'000.0 * 1e-9);
  EXPECT_EQ(*by_power.peak_watts, 500.0);
}

TEST(Energy, DeviceReadingsKeepBothMethods) {
  DeviceReadings d;
  for (const PowerReading& r : {counter(0, 1000, 300'000), failed(100), counter(200, 1070, 500'000),
                                counter(300, 1100, 400'000)}) {
    d.add(r);
  }
  EXPECT_EQ(d.readings, 4);
  EXPECT_EQ(d.first_nanoseconds, 0);
  EXPECT_EQ(d.last_nanoseconds, 300 * kMs);
  const IntegratedEnergy c = d.by_counter.result();
  EXPECT_DOUBLE_EQ(c.joules, 0.1);  // 1100 - 1000 mJ, the failed read spanned
  EXPECT_DOUBLE_EQ(c.sampled_seconds, 0.3);
  EXPECT_EQ(c.failed_reads, 1);
  const IntegratedEnergy p = d.by_power.result();
  EXPECT_DOUBLE_EQ(p.joules, 45.0);  // only 0.2-0.3 s: (500 + 400) / 2 W x 0.1 s
  EXPECT_DOUBLE_EQ(p.sampled_seconds, 0.1);
}

TEST(Energy, MethodNames) {
  EXPECT_STREQ(to_string(EnergyMethod::kEnergyCounter), "energy_counter");
  EXPECT_STREQ(to_string(EnergyMethod::kPowerIntegration), "power_integration");
}

}  // namespace
}  // namespace ftbench::device
