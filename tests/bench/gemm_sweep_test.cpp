#include "bench/gemm_sweep.h"

#include <gtest/gtest.h>

namespace ftbench::bench {
namespace {

using Shapes = std::vector<GemmShape>;

// The SweepError message of parsing `spec` as --shapes; fails the test if none is thrown.
std::string sweep_error(const std::string& spec) {
  try {
    parse_shape_sweep(spec, "--shapes");
  } catch (const SweepError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no SweepError for \"" << spec << "\"";
  return "";
}

std::string dtype_error(const std::string& list) {
  try {
    parse_dtypes(list, "--dtype");
  } catch (const SweepError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no SweepError for \"" << list << "\"";
  return "";
}

TEST(GemmSweep, OneSizeIsACube) {
  EXPECT_EQ(parse_shape_sweep("4096", "--shapes"), (Shapes{{4096, 4096, 4096}}));
}

TEST(GemmSweep, RangeIncludesItsStopWhenTheStepsLandOnIt) {
  EXPECT_EQ(
      parse_shape_sweep("1024:4096:1024", "--shapes"),
      (Shapes{{1024, 1024, 1024}, {2048, 2048, 2048}, {3072, 3072, 3072}, {4096, 4096, 4096}}));
  // 256 + 3·512 = 1792 <= 2000 < 2304: the stop is a bound, not a value.
  EXPECT_EQ(parse_shape_sweep("256:2000:512", "--shapes"),
            (Shapes{{256, 256, 256}, {768, 768, 768}, {1280, 1280, 1280}, {1792, 1792, 1792}}));
  EXPECT_EQ(parse_shape_sweep("64:64:8", "--shapes"), (Shapes{{64, 64, 64}}));
}

TEST(GemmSweep, ThreeDimensionsAreACartesianProductWithMSlowest) {
  EXPECT_EQ(parse_shape_sweep("1024:2048:1024 x 4096 x 512,1024", "--shapes"),
            (Shapes{{1024, 4096, 512}, {1024, 4096, 1024}, {2048, 4096, 512}, {2048, 4096, 1024}}));
}

TEST(GemmSweep, GroupsKeepTheirOrderAndDuplicatesAreMeasuredOnce) {
  EXPECT_EQ(parse_shape_sweep("512;8192x4096x4096; 512 ;4096X4096X4096;4096", "--shapes"),
            (Shapes{{512, 512, 512}, {8192, 4096, 4096}, {4096, 4096, 4096}}));
}

TEST(GemmSweep, TheDefaultsParse) {
  for (const char* backend : {"cpu", "cuda", "rocm"}) {
    for (bool quick : {false, true}) {
      const SweepDefaults d = default_sweep(backend, quick);
      EXPECT_FALSE(parse_shape_sweep(d.shapes, "--shapes").empty()) << backend << quick;
      EXPECT_FALSE(d.dtypes.empty());
      EXPECT_GE(d.iterations, 1);
      EXPECT_GT(d.max_seconds, 0.0);
    }
  }
  // Cubes 1024..16384 (16) and 3 token counts x 2 x 2 projection shapes (12), of which
  // 4096x4096x4096 is already a cube.
  EXPECT_EQ(parse_shape_sweep(default_sweep("cuda", false).shapes, "--shapes").size(), 27u);
  EXPECT_EQ(parse_shape_sweep(default_sweep("cpu", true).shapes, "--shapes"),
            (Shapes{{128, 128, 128}, {256, 256, 256}, {512, 512, 512}}));
  EXPECT_EQ(default_sweep("cpu", false).dtypes, (std::vector<std::string>{"bf16", "fp32"}));
  EXPECT_EQ(default_sweep("cuda", false).dtypes,
            (std::vector<std::string>{"bf16", "fp8", "fp16", "tf32", "fp32"}));
}

TEST(GemmSweep, BadSpecsNameTheOptionTheValueAndTheProblem) {
  EXPECT_EQ(sweep_error(""),
            "--shapes \"\": empty sweep (expected e.g. 1024:8192:1024 or 4096x4096x1024,2048)");
  EXPECT_EQ(sweep_error("4096x4096"),
            "--shapes \"4096x4096\": group \"4096x4096\" has 2 dimensions; give m x n x k, or one "
            "for cubes");
  EXPECT_EQ(sweep_error("1024:512:256"),
            "--shapes \"1024:512:256\": range \"1024:512:256\" starts above its stop (1024 > 512)");
  EXPECT_EQ(sweep_error("1024:2048"),
            "--shapes \"1024:2048\": range \"1024:2048\" needs three parts, start:stop:step");
  EXPECT_EQ(sweep_error("1024:2048:0"),
            "--shapes \"1024:2048:0\": range step \"0\" is not a positive integer");
  EXPECT_EQ(sweep_error("1k"), "--shapes \"1k\": size \"1k\" is not a positive integer");
  EXPECT_EQ(sweep_error("-5"), "--shapes \"-5\": size \"-5\" is not a positive integer");
  EXPECT_EQ(sweep_error("0x1x1"), "--shapes \"0x1x1\": size \"0\" is not a positive integer");
  EXPECT_EQ(sweep_error("512,,1024"), "--shapes \"512,,1024\": empty size");
  EXPECT_EQ(sweep_error("512;;1024"), "--shapes \"512;;1024\": empty group between ';'");
  EXPECT_EQ(sweep_error("2097152"),
            "--shapes \"2097152\": size \"2097152\" is above the largest dimension, 1048576");
  EXPECT_EQ(sweep_error("1:100000:1"), "--shapes \"1:100000:1\": more than 10000 shapes");
}

TEST(GemmSweep, ShapeTextIsMxNxK) { EXPECT_EQ(shape_text({8192, 4096, 14336}), "8192x4096x14336"); }

TEST(GemmSweep, FlopsAreTwoMNK) {
  EXPECT_EQ(matmul_flops({1, 1, 1}), 2.0);
  EXPECT_EQ(matmul_flops({2, 3, 5}), 60.0);
  EXPECT_EQ(matmul_flops({4096, 4096, 4096}), 137438953472.0);   // 2^37
  EXPECT_EQ(matmul_flops({8192, 8192, 8192}), 1099511627776.0);  // 2^40
  EXPECT_EQ(matmul_flops({16384, 4096, 14336}), 1924145348608.0);
  // The largest shape allowed: 2 · 2^60 = 2^61, no overflow.
  EXPECT_EQ(matmul_flops({kMaxGemmDimension, kMaxGemmDimension, kMaxGemmDimension}),
            2305843009213693952.0);
}

TEST(GemmSweep, DtypesInTheOrderGivenOrAll) {
  EXPECT_EQ(parse_dtypes("fp32,bf16", "--dtype"), (std::vector<std::string>{"fp32", "bf16"}));
  EXPECT_EQ(parse_dtypes("bf16, bf16 ,tf32", "--dtype"),
            (std::vector<std::string>{"bf16", "tf32"}));
  EXPECT_EQ(parse_dtypes("all", "--dtype"),
            (std::vector<std::string>{"bf16", "fp8", "fp16", "tf32", "fp32"}));
}

TEST(GemmSweep, BadDtypesNameTheOptionAndTheChoices) {
  EXPECT_EQ(dtype_error("bf61"),
            "--dtype \"bf61\": unknown dtype \"bf61\" (did you mean bf16?); choose from bf16, "
            "fp8, fp16, tf32, fp32, or all");
  EXPECT_EQ(dtype_error("fp32,float64"),
            "--dtype \"fp32,float64\": unknown dtype \"float64\"; choose from bf16, fp8, fp16, "
            "tf32, fp32, or all");
  EXPECT_EQ(dtype_error("fp32,"),
            "--dtype \"fp32,\": empty dtype name; choose from bf16, fp8, fp16, tf32, fp32, or all");
}

}  // namespace
}  // namespace ftbench::bench
