#include "device/process_clock.h"
#include "util/text/iso8601.h"

#include <gtest/gtest.h>

namespace ftbench::device {
namespace {

TEST(ProcessClock, Iso8601Utc) {
  EXPECT_EQ(text::iso8601_utc(0.0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(text::iso8601_utc(1789000000.25), "2026-09-10T00:26:40.250Z");
  EXPECT_EQ(text::iso8601_utc(86400.007), "1970-01-02T00:00:00.007Z");
}

TEST(ProcessClock, LaunchIsNonNegativeAndNowAfterIt) {
  const ProcessClock c = ProcessClock::from_process_start();
  EXPECT_GE(c.launch_seconds(), 0.0);
  // A test binary has been running for less than an hour when this runs.
  EXPECT_LT(c.launch_seconds(), 3600.0);
  EXPECT_GE(c.now(), c.launch_seconds());
  EXPECT_NEAR(c.start_epoch_seconds() + c.now(), epoch_seconds_now(), 0.5);
}

}  // namespace
}  // namespace ftbench::device
