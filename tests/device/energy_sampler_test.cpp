// The energy sampler against the fake query module's scripted sensor
// (tests/device/fake_gpu_query.cpp): each reading is stamped 100 ms after the one before by a
// fake clock, so the figures are exact whatever the machine's speed. Rounds taken after the
// script ran out repeat its last entry, which adds no energy to a counter and, at 0 W, none
// to integrated power.
#include "device/energy_sampler.h"
#include "report/metrics/energy_summary.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "../scoped_env.h"

namespace ftbench::device {
namespace {

using ftbench::tests::ScopedEnv;

std::unique_ptr<GpuQuery> fake_query() {
  ModuleSearch s;
  s.override_path = FTBENCH_FAKE_GPU_QUERY;
  return GpuQuery::load(GpuRuntime::kCuda, s);
}

// 0, 100 ms, 200 ms, ... one tick a reading.
std::function<int64_t()> ticking_clock() {
  auto tick = std::make_shared<std::atomic<int64_t>>(0);
  return [tick] { return tick->fetch_add(1) * 100'000'000; };
}

// Runs a 1 ms sampler over `devices` until it has taken `rounds` rounds, then stops it.
std::vector<device::DeviceReadings> sample(const GpuQuery& q, std::vector<int64_t> devices,
                                           int64_t rounds, std::string* error = nullptr) {
  EnergySampler sampler(q, devices, 1'000'000, ticking_clock());
  while (sampler.rounds() < rounds) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::vector<device::DeviceReadings> out = sampler.stop();
  if (error != nullptr) *error = sampler.last_error();
  return out;
}

std::vector<report::StepRecord> steps(int64_t n, int64_t tokens_each) {
  std::vector<report::StepRecord> out(static_cast<size_t>(n));
  for (report::StepRecord& s : out) s.real_tokens = tokens_each;
  return out;
}

TEST(EnergySampler, CounterAcrossAFailedRead) {
  const ScopedEnv one("FTBENCH_FAKE_GPU_DEVICES", "1");
  const ScopedEnv energy("FTBENCH_FAKE_GPU_ENERGY_MJ", "1000,2000,fail,4000,4500");
  const auto q = fake_query();
  std::string error;
  const std::vector<device::DeviceReadings> d = sample(*q, {0}, 5, &error);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].library, "libfake-nvidia-ml.so.1");
  EXPECT_EQ(d[0].energy_source, "fakeDeviceGetTotalEnergyConsumption");
  EXPECT_EQ(d[0].pci_bus_id, "0000:1B:00.0");
  const auto n = d[0].readings;
  ASSERT_GE(n, 6);  // 5 rounds and the last one
  EXPECT_EQ(error, "fakeErrorPowerRead: scripted failure");

  const report::Energy e = metrics::summarize_energy(d, 0.1, 1, steps(7, 1000), error);
  EXPECT_EQ(e.reason, "");
  EXPECT_EQ(e.method, "energy_counter");
  EXPECT_EQ(e.source, "fakeDeviceGetTotalEnergyConsumption");
  EXPECT_DOUBLE_EQ(*e.joules, 3.5);  // 4500 - 1000 mJ, the failed read spanned
  EXPECT_DOUBLE_EQ(*e.joules_per_step, 0.5);
  EXPECT_DOUBLE_EQ(*e.joules_per_million_tokens, 500.0);
  EXPECT_EQ(e.window_start_seconds, 0.0);
  EXPECT_DOUBLE_EQ(e.window_seconds, 0.1 * double(n - 1));
  EXPECT_DOUBLE_EQ(*e.coverage, 1.0);
  EXPECT_EQ(e.sample_count, n - 1);
  EXPECT_EQ(e.devices[0].failed_reads, 1);
  EXPECT_DOUBLE_EQ(*e.peak_watts, 10.0);  // 2000 -> 4000 mJ over 0.2 s
}

TEST(EnergySampler, CounterResetBridgedByPower) {
  const ScopedEnv one("FTBENCH_FAKE_GPU_DEVICES", "1");
  const ScopedEnv energy("FTBENCH_FAKE_GPU_ENERGY_MJ", "1000,3000,500,1500");
  const ScopedEnv power("FTBENCH_FAKE_GPU_POWER_MW", "400000");
  const auto q = fake_query();
  const report::Energy e = metrics::summarize_energy(sample(*q, {0}, 4), 0.1, 1, steps(2, 10), "");
  ASSERT_EQ(e.devices.size(), 1u);
  EXPECT_EQ(e.devices[0].counter_resets, 1);
  EXPECT_DOUBLE_EQ(*e.joules, 2.0 + 40.0 + 1.0);  // 400 W x 0.1 s across the reset
  EXPECT_DOUBLE_EQ(*e.coverage, 1.0);
}

TEST(EnergySampler, WithoutACounterPowerIsIntegrated) {
  const ScopedEnv one("FTBENCH_FAKE_GPU_DEVICES", "1");
  const ScopedEnv energy("FTBENCH_FAKE_GPU_ENERGY_MJ", "none");
  const ScopedEnv power("FTBENCH_FAKE_GPU_POWER_MW", "300000,500000,400000,0");
  const auto q = fake_query();
  const std::vector<device::DeviceReadings> d = sample(*q, {0}, 4);
  EXPECT_EQ(d[0].energy_source, "");
  const report::Energy e = metrics::summarize_energy(d, 0.1, 1, steps(1, 10), "");
  EXPECT_EQ(e.method, "power_integration");
  EXPECT_EQ(e.source, "fakeDeviceGetPowerUsage");
  EXPECT_DOUBLE_EQ(*e.joules, 40.0 + 45.0 + 20.0);
  EXPECT_DOUBLE_EQ(e.devices[0].peak_watts.value(), 500.0);
}

TEST(EnergySampler, AFailedReadMidRunLeavesAGapInPower) {
  const ScopedEnv one("FTBENCH_FAKE_GPU_DEVICES", "1");
  const ScopedEnv energy("FTBENCH_FAKE_GPU_ENERGY_MJ", "none");
  const ScopedEnv power("FTBENCH_FAKE_GPU_POWER_MW", "200000,200000,fail,200000,0");
  const auto q = fake_query();
  const std::vector<device::DeviceReadings> d = sample(*q, {0}, 5);
  const auto n = static_cast<double>(d[0].readings);
  const report::Energy e = metrics::summarize_energy(d, 0.1, 1, steps(1, 10), "");
  // Covered: 0-0.1 s (20 J), 0.3-0.4 s (10 J) and every interval at 0 W after; not 0.1-0.3 s.
  EXPECT_DOUBLE_EQ(*e.joules, 30.0);
  EXPECT_DOUBLE_EQ(*e.sampled_seconds, 0.1 * (n - 1) - 0.2);
  EXPECT_DOUBLE_EQ(*e.coverage, (0.1 * (n - 1) - 0.2) / (0.1 * (n - 1)));
}

TEST(EnergySampler, EveryReadFailingSaysWhy) {
  const ScopedEnv one("FTBENCH_FAKE_GPU_DEVICES", "1");
  const ScopedEnv energy("FTBENCH_FAKE_GPU_ENERGY_MJ", "fail");
  const auto q = fake_query();
  std::string error;
  const std::vector<device::DeviceReadings> d = sample(*q, {0}, 2, &error);
  const report::Energy e = metrics::summarize_energy(d, 0.1, 1, steps(3, 10), error);
  EXPECT_EQ(e.reason,
            "no two successive readings of a device (last error: fakeErrorPowerRead: scripted "
            "failure)");
  EXPECT_FALSE(e.joules.has_value());
  EXPECT_TRUE(e.devices.empty());
  EXPECT_EQ(e.steps, 3);
  EXPECT_EQ(e.tokens, 30);
}

TEST(EnergySampler, TwoDevicesAddUp) {
  const auto q = fake_query();  // 2 devices, 50 J more at every read, 500 W
  const std::vector<device::DeviceReadings> d = sample(*q, {0, 1}, 3);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[1].pci_bus_id, "0000:1C:00.0");
  const report::Energy e = metrics::summarize_energy(d, 0.1, 1, steps(1, 10), "");
  ASSERT_EQ(e.devices.size(), 2u);
  const auto n = static_cast<double>(d[0].readings);
  EXPECT_DOUBLE_EQ(e.devices[0].joules, 50.0 * (n - 1));
  EXPECT_DOUBLE_EQ(e.devices[1].joules, 50.0 * (n - 1));
  EXPECT_DOUBLE_EQ(*e.joules, 100.0 * (n - 1));
  EXPECT_EQ(e.sample_count, 2 * static_cast<int64_t>(n));
}

TEST(EnergySampler, ASensorThatCannotBeOpenedSaysWhy) {
  const ScopedEnv open_error("FTBENCH_FAKE_GPU_POWER_OPEN_ERROR",
                             "libfake-nvidia-ml.so.1: cannot open shared object file");
  const auto q = fake_query();
  try {
    EnergySampler sampler(*q, {0}, 1'000'000, ticking_clock());
    FAIL() << "no GpuQueryError";
  } catch (const GpuQueryError& e) {
    EXPECT_STREQ(e.what(),
                 "cuda device 0 power: libfake-nvidia-ml.so.1: cannot open shared object file");
  }
}

TEST(EnergySampler, StopsWithoutStop) {
  const auto q = fake_query();
  EnergySampler sampler(*q, {0}, 1'000'000'000, ticking_clock());  // destroyed while waiting
  EXPECT_LE(sampler.rounds(), 1);
}

}  // namespace
}  // namespace ftbench::device
