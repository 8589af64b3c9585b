// Strict, locale-independent number parsing for YAML scalars and flags: exact results.
#include "util/text/parse_number.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace ftbench::text {
namespace {

TEST(ParseNumber, Integers) {
  int64_t v = 0;
  EXPECT_EQ(parse_int("42", v), std::errc());
  EXPECT_EQ(v, 42);
  EXPECT_EQ(parse_int("+5", v), std::errc());
  EXPECT_EQ(v, 5);
  EXPECT_EQ(parse_int("-7", v), std::errc());
  EXPECT_EQ(v, -7);
  EXPECT_EQ(parse_int("+-5", v), std::errc::invalid_argument);
  EXPECT_EQ(parse_int("", v), std::errc::invalid_argument);
  EXPECT_EQ(parse_int("+", v), std::errc::invalid_argument);
  EXPECT_EQ(parse_int("1e3", v), std::errc::invalid_argument);
  EXPECT_EQ(parse_int("0x10", v), std::errc::invalid_argument);
  EXPECT_EQ(parse_int("1_000", v), std::errc::invalid_argument);
  EXPECT_EQ(parse_int("9223372036854775808", v), std::errc::result_out_of_range);
}

TEST(ParseNumber, UnsignedIntegers) {
  uint64_t v = 0;
  EXPECT_EQ(parse_uint("18446744073709551615", v), std::errc());
  EXPECT_EQ(v, 18446744073709551615ull);
  EXPECT_EQ(parse_uint("-0", v), std::errc::invalid_argument);
  EXPECT_EQ(parse_uint("18446744073709551616", v), std::errc::result_out_of_range);
}

TEST(ParseNumber, FiniteDoubles) {
  double v = 0.0;
  EXPECT_EQ(parse_double("0.05", v), std::errc());
  EXPECT_EQ(v, 0.05);
  EXPECT_EQ(parse_double("+1e-8", v), std::errc());
  EXPECT_EQ(v, 1e-8);
  EXPECT_EQ(parse_double("1e999", v), std::errc::result_out_of_range);
  EXPECT_EQ(parse_double("inf", v), std::errc::result_out_of_range);
  EXPECT_EQ(parse_double(".inf", v), std::errc::invalid_argument);
  EXPECT_EQ(parse_double("1.5x", v), std::errc::invalid_argument);
}

TEST(ParseNumber, AnyDoubleKeepsYamlsInfinitiesAndNan) {
  double v = 0.0;
  EXPECT_TRUE(parse_any_double(".Inf", v));
  EXPECT_EQ(v, std::numeric_limits<double>::infinity());
  EXPECT_TRUE(parse_any_double("-.inf", v));
  EXPECT_EQ(v, -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(parse_any_double(".NaN", v));
  EXPECT_TRUE(std::isnan(v));
  EXPECT_TRUE(parse_any_double("-1e999", v));
  EXPECT_EQ(v, -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(parse_any_double("2.5", v));
  EXPECT_EQ(v, 2.5);
  EXPECT_FALSE(parse_any_double("1e999x", v));
  EXPECT_FALSE(parse_any_double("", v));
  EXPECT_FALSE(parse_any_double("abc", v));
}

}  // namespace
}  // namespace ftbench::text
