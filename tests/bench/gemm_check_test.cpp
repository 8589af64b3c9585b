// The gemm check's tolerance rule (bench/gemm_check.h): exact values. Whether it holds a real
// worst-case kernel and still catches a wrong one is checked in gemm_test.cpp, with tensors.
#include "bench/gemm_check.h"

#include <cmath>
#include <stdexcept>

#include <gtest/gtest.h>

namespace ftbench::bench {
namespace {

TEST(GemmCheck, RoundingsOfEachDtype) {
  const GemmRounding bf16 = gemm_rounding("bf16").value();
  EXPECT_EQ(bf16.input, 0.0);
  EXPECT_EQ(bf16.output, 1.0 / 256);
  EXPECT_EQ(bf16.accumulation, 1.0 / 512);  // half the unit roundoff per sqrt(k)
  const GemmRounding fp16 = gemm_rounding("fp16").value();
  EXPECT_EQ(fp16.output, 1.0 / 2048);
  EXPECT_EQ(fp16.accumulation, 1.0 / 4096);
  const GemmRounding fp8 = gemm_rounding("fp8").value();  // fp8 in, bf16 out
  EXPECT_EQ(fp8.input, 0.0);
  EXPECT_EQ(fp8.output, 1.0 / 256);
  const GemmRounding tf32 = gemm_rounding("tf32").value();
  EXPECT_EQ(tf32.input, 1.0 / 256);  // two inputs cut to 10 bits: 4 x 2^-10
  EXPECT_EQ(tf32.output, std::ldexp(1.0, -24));
  const GemmRounding fp32 = gemm_rounding("fp32").value();
  EXPECT_EQ(fp32.input, 0.0);
  EXPECT_EQ(fp32.accumulation, std::ldexp(1.0, -25));
  EXPECT_FALSE(gemm_rounding("int8").has_value());
  EXPECT_FALSE(gemm_rounding("").has_value());
}

TEST(GemmCheck, ToleranceGrowsWithTheSquareRootOfK) {
  const GemmRounding bf16 = gemm_rounding("bf16").value();
  EXPECT_EQ(gemm_check_tolerance(bf16, 1), 3.0 / 512);
  EXPECT_EQ(gemm_check_tolerance(bf16, 256), 9.0 / 256);  // 2^-8 + 2^-9 x 16
  EXPECT_EQ(gemm_check_tolerance(bf16, 4096), 33.0 / 256);
  EXPECT_EQ(gemm_check_tolerance(bf16, 512), (2.0 + std::sqrt(512.0)) / 512);
  EXPECT_EQ(gemm_check_tolerance(gemm_rounding("fp16").value(), 64), 5.0 / 2048);
  EXPECT_EQ(gemm_check_tolerance(gemm_rounding("fp32").value(), 1024), 17.0 * std::ldexp(1.0, -24));
  EXPECT_EQ(gemm_check_tolerance(gemm_rounding("tf32").value(), 4),
            1.0 / 256 + 2.0 * std::ldexp(1.0, -24));
}

TEST(GemmCheck, ToleranceNeverExceedsAQuarter) {
  const GemmRounding bf16 = gemm_rounding("bf16").value();
  EXPECT_EQ(gemm_check_tolerance(bf16, 15625), 127.0 / 512);  // 125^2: just below
  EXPECT_EQ(gemm_check_tolerance(bf16, 15876), 0.25);         // 126^2: 128/512, the cap itself
  EXPECT_EQ(gemm_check_tolerance(bf16, 16384), 0.25);         // 130/512, capped
  EXPECT_EQ(gemm_check_tolerance(bf16, int64_t{1} << 20), kMaxGemmCheckTolerance);
  EXPECT_EQ(kMaxGemmCheckTolerance, 0.25);
  EXPECT_THROW(gemm_check_tolerance(bf16, 0), std::invalid_argument);
}

TEST(GemmCheck, RuleInWords) {
  EXPECT_EQ(gemm_check_rule("bf16"), "2^-8 + 2^-9 x sqrt(k)");
  EXPECT_EQ(gemm_check_rule("fp16"), "2^-11 + 2^-12 x sqrt(k)");
  EXPECT_EQ(gemm_check_rule("tf32"), "2^-8 + 2^-24 + 2^-25 x sqrt(k)");
  EXPECT_EQ(gemm_check_rule("fp32"), "2^-24 + 2^-25 x sqrt(k)");
  EXPECT_EQ(gemm_check_rule("int8"), "");
}

}  // namespace
}  // namespace ftbench::bench
