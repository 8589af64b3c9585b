#include "util/text/trim.h"

#include <gtest/gtest.h>

namespace ftbench::text {
namespace {

TEST(Trim, BlanksAreSpacesAndTabsOnly) {
  EXPECT_EQ(trim(" \t lora.rank \t", kBlanks), "lora.rank");
  EXPECT_EQ(trim("\nlora.rank\r\n", kBlanks), "\nlora.rank\r\n");
  EXPECT_EQ(trim("a b", kBlanks), "a b");
}

TEST(Trim, WhitespaceIsWhatIsspaceSees) {
  EXPECT_EQ(trim("\n\t step=3 \v\f\r\n", kWhitespace), "step=3");
  EXPECT_EQ(trim(" \r\n", kWhitespace), "");
  EXPECT_EQ(trim("", kWhitespace), "");
  static_assert(trim("  x ", kBlanks) == "x");
}

}  // namespace
}  // namespace ftbench::text
