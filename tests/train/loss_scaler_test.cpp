#include "train/loss_scaler.h"

#include <gtest/gtest.h>

namespace ftbench::train {
namespace {

TEST(LossScaler, DisabledIsIdentity) {
  LossScaler s(false);
  EXPECT_EQ(s.scale(), 1.0);
  EXPECT_FALSE(s.update(false));
  EXPECT_EQ(s.scale(), 1.0);
}

TEST(LossScaler, HalvesOnOverflowAndGrowsAfterTheInterval) {
  LossScaler s(true, 1024.0, 3);
  EXPECT_TRUE(s.update(false));
  EXPECT_EQ(s.scale(), 512.0);
  EXPECT_FALSE(s.update(true));
  EXPECT_FALSE(s.update(true));
  EXPECT_EQ(s.scale(), 512.0);
  EXPECT_FALSE(s.update(true));  // third clean step in a row
  EXPECT_EQ(s.scale(), 1024.0);
  EXPECT_FALSE(s.update(true));
  EXPECT_FALSE(s.update(true));
  EXPECT_TRUE(s.update(false));  // an overflow resets the count
  EXPECT_EQ(s.scale(), 512.0);
  EXPECT_FALSE(s.update(true));
  EXPECT_FALSE(s.update(true));
  EXPECT_EQ(s.scale(), 512.0);
}

TEST(LossScaler, GradScalerDefaults) {
  LossScaler s(true);
  EXPECT_EQ(s.scale(), 65536.0);
  for (int i = 0; i < 1999; ++i) ASSERT_FALSE(s.update(true));
  EXPECT_EQ(s.scale(), 65536.0);
  EXPECT_FALSE(s.update(true));
  EXPECT_EQ(s.scale(), 131072.0);
}

}  // namespace
}  // namespace ftbench::train
