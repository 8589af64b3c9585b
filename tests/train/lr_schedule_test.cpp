#include "train/lr_schedule.h"

#include <cmath>

#include <gtest/gtest.h>

namespace ftbench::train {
namespace {

TEST(LrSchedule, WarmupIsLinearFromZero) {
  const LrSchedule s{1e-3, 4, 20, "cosine", 0.0};
  EXPECT_DOUBLE_EQ(lr_at(s, 0), 0.0);
  EXPECT_DOUBLE_EQ(lr_at(s, 1), 0.25e-3);
  EXPECT_DOUBLE_EQ(lr_at(s, 3), 0.75e-3);
  EXPECT_DOUBLE_EQ(lr_at(s, 4), 1e-3);
}

TEST(LrSchedule, CosineHalfwayAndEnd) {
  const LrSchedule s{2.0, 0, 10, "cosine", 0.0};
  EXPECT_DOUBLE_EQ(lr_at(s, 5), 1.0);
  EXPECT_NEAR(lr_at(s, 10), 0.0, 1e-15);
  const LrSchedule floor{2.0, 0, 10, "cosine", 0.1};
  EXPECT_NEAR(lr_at(floor, 10), 0.2, 1e-15);
  EXPECT_DOUBLE_EQ(lr_at(floor, 5), 2.0 * (0.1 + 0.9 * 0.5));
}

TEST(LrSchedule, LinearAndConstant) {
  const LrSchedule lin{1.0, 2, 12, "linear", 0.0};
  EXPECT_DOUBLE_EQ(lr_at(lin, 2), 1.0);
  EXPECT_DOUBLE_EQ(lr_at(lin, 7), 0.5);
  EXPECT_DOUBLE_EQ(lr_at(lin, 12), 0.0);
  const LrSchedule c{0.5, 2, 12, "constant", 0.0};
  EXPECT_DOUBLE_EQ(lr_at(c, 1), 0.25);
  EXPECT_DOUBLE_EQ(lr_at(c, 11), 0.5);
}

}  // namespace
}  // namespace ftbench::train
