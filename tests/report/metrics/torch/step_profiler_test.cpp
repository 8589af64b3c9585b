#include "report/metrics/step_profiler.h"

#include "device/torch/profile_scopes.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <gtest/gtest.h>

namespace ftbench::metrics {
namespace {

TEST(StepProfiler, RecordsTheWindowsOpsScopesShapesAndFlops) {
  ASSERT_TRUE(profiler_support().available) << profiler_support().why_not;
  StepProfiler profiler({2, 3}, /*device_activity=*/false);
  const at::Tensor a = at::ones({8, 16});
  const at::Tensor b = at::ones({16, 4});
  for (int64_t step = 1; step <= 4; ++step) {
    profiler.step_begins(step);
    EXPECT_EQ(profiler.recording(), step == 2 || step == 3);
    {
      RECORD_USER_SCOPE(device::kScopeForward);
      (void)at::mm(a, b);
    }
    const std::optional<std::vector<ProfileEvent>> events = profiler.step_ended(step);
    EXPECT_EQ(events.has_value(), step == 3);
    if (!events) continue;
    const ProfileTables t = tabulate_profile(*events);
    ASSERT_EQ(t.scopes.size(), 1u);
    EXPECT_EQ(t.scopes[0].name, device::kScopeForward);
    EXPECT_EQ(t.scopes[0].calls, 2);  // steps 2 and 3
    bool found = false;
    for (const OpRow& r : t.ops) {
      if (r.name != "aten::mm") continue;
      found = true;
      EXPECT_EQ(r.calls, 2);
      EXPECT_EQ(r.flops, 2u * 2 * 8 * 16 * 4);  // 2 m n k a call
      EXPECT_EQ(r.input_bytes, 2 * (8 * 16 + 16 * 4) * 4);
    }
    EXPECT_TRUE(found);
  }
  EXPECT_FALSE(profiler.stop().has_value());
}

TEST(StepProfiler, StopEndsARecordingMidWindow) {
  StepProfiler profiler({1, 5}, false);
  profiler.step_begins(1);
  (void)at::ones({3}).sum();
  const std::optional<std::vector<ProfileEvent>> events = profiler.stop();
  ASSERT_TRUE(events.has_value());
  EXPECT_FALSE(profiler.recording());
  bool found = false;
  for (const ProfileEvent& e : *events) found = found || e.name == "aten::sum";
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace ftbench::metrics
