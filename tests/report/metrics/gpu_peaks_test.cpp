#include "report/metrics/gpu_peaks.h"

#include <gtest/gtest.h>

namespace ftbench::metrics {
namespace {

TEST(GpuPeaks, MatchesDriverNames) {
  EXPECT_DOUBLE_EQ(find_gpu_peak("NVIDIA H100 80GB HBM3", "bf16")->dense_bf16_tflops, 989.0);
  EXPECT_EQ(find_gpu_peak("NVIDIA H200", "bf16")->table_name, "H200-SXM");
  EXPECT_EQ(find_gpu_peak("NVIDIA H100 80GB HBM3", "bf16")->table_name, "H100-SXM");
  EXPECT_DOUBLE_EQ(find_gpu_peak("AMD Instinct MI300X", "fp16")->dense_bf16_tflops, 1307.4);
  EXPECT_DOUBLE_EQ(find_gpu_peak("NVIDIA A100-SXM4-80GB", "bf16")->dense_bf16_tflops, 312.0);
  EXPECT_DOUBLE_EQ(find_gpu_peak("NVIDIA B200", "bf16")->dense_bf16_tflops, 2250.0);
}

TEST(GpuPeaks, UnknownOrUntabledGivesNothing) {
  EXPECT_FALSE(find_gpu_peak("NVIDIA H100 PCIe", "bf16").has_value());
  EXPECT_FALSE(find_gpu_peak("NVIDIA H100 NVL", "bf16").has_value());
  EXPECT_FALSE(find_gpu_peak("NVIDIA GH200 480GB", "bf16").has_value());
  EXPECT_FALSE(find_gpu_peak("NVIDIA A100-SXM4-40GB", "bf16").has_value());
  EXPECT_FALSE(find_gpu_peak("NVIDIA H100 80GB HBM3", "fp32").has_value());
  EXPECT_FALSE(find_gpu_peak("AMD EPYC 9654", "bf16").has_value());
}

}  // namespace
}  // namespace ftbench::metrics
