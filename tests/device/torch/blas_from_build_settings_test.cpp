// The BLAS named by LibTorch's build settings, the report's last resort when LibTorch links its
// BLAS in itself (PyPI's x86 wheels and MKL): exact words for the settings lines LibTorch prints.
#include <string>

#include <gtest/gtest.h>

#include "device/torch/backend.h"

namespace ftbench::device {
namespace {

TEST(BlasFromBuildSettings, NamesMklFromAPyPIWheelsSettings) {
  // As torch 2.15.0's torch.__config__.show() prints it (abridged).
  const std::string config =
      "PyTorch built with:\n  - GCC 13.3\n  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, "
      "LAPACK_INFO=mkl, TORCH_VERSION=2.15.0, USE_MKL=ON,\n";
  EXPECT_EQ(blas_from_build_settings(config), "mkl");
}

TEST(BlasFromBuildSettings, NamesOpenBlasForOpen) {
  EXPECT_EQ(blas_from_build_settings("  - Build settings: BLAS_INFO=open, BUILD_TYPE=Release"),
            "openblas");
}

TEST(BlasFromBuildSettings, KeepsAnotherValueAsWritten) {
  EXPECT_EQ(blas_from_build_settings("Build settings: BLAS_INFO=flexi, LAPACK_INFO=flexi"),
            "flexi");
  EXPECT_EQ(blas_from_build_settings("Build settings: BLAS_INFO=blis\n"), "blis");
  EXPECT_EQ(blas_from_build_settings("BLAS_INFO=accelerate"), "accelerate");
}

TEST(BlasFromBuildSettings, UnknownWhenTheSettingsNameNone) {
  EXPECT_EQ(blas_from_build_settings(""), "unknown");
  EXPECT_EQ(blas_from_build_settings("PyTorch built with:\n  - GCC 12.2\n"), "unknown");
  EXPECT_EQ(blas_from_build_settings("Build settings: BLAS_INFO=, BUILD_TYPE=Release"), "unknown");
}

TEST(BlasFromBuildSettings, TheRunningLibTorchNamesABlas) {
  // Whatever LibTorch this is, the process resolves its matmul's BLAS to a name.
  EXPECT_NE(resolved_blas(), "unknown");
}

}  // namespace
}  // namespace ftbench::device
