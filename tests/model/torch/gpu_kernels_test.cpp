// model/torch/gpu_kernels.h where no GPU is needed: the FTBENCH_GPU_KERNELS switch, the build's own
// account of the kernel, and that CPU tensors are never taken (the kernel's numbers are checked
// on a GPU, tests/gpu/rope_kernel_test.cpp).
#include "model/torch/gpu_kernels.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "../../scoped_env.h"

namespace ftbench::model {
namespace {

TEST(GpuKernels, SwitchIsOffUnlessFtbenchGpuKernelsIsOne) {
  {
    tests::ScopedEnv env("FTBENCH_GPU_KERNELS", "");
    ::unsetenv("FTBENCH_GPU_KERNELS");
    EXPECT_FALSE(gpu_kernels_enabled_from_environment());
  }
  {
    tests::ScopedEnv env("FTBENCH_GPU_KERNELS", "0");
    EXPECT_FALSE(gpu_kernels_enabled_from_environment());
  }
  {
    tests::ScopedEnv env("FTBENCH_GPU_KERNELS", "1");
    EXPECT_TRUE(gpu_kernels_enabled_from_environment());
  }
  for (const char* value : {"", "yes", "true", " 1", "2"}) {
    tests::ScopedEnv env("FTBENCH_GPU_KERNELS", value);
    try {
      gpu_kernels_enabled_from_environment();
      ADD_FAILURE() << "accepted \"" << value << "\"";
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("FTBENCH_GPU_KERNELS"), std::string::npos) << message;
      EXPECT_NE(message.find("expected 0"), std::string::npos) << message;
      EXPECT_NE(message.find("found \"" + std::string(value) + "\""), std::string::npos) << message;
    }
  }
}

TEST(GpuKernels, BuiltAsCMakeSaid) {
#if defined(FTBENCH_GPU_KERNELS_BUILT)
  EXPECT_TRUE(gpu_rope_kernel_built());
#else
  EXPECT_FALSE(gpu_rope_kernel_built());
#endif
}

TEST(GpuKernels, CpuTensorsAreNeverTaken) {
  const at::Tensor x = at::randn({2, 5, 3, 8});
  at::Tensor out = at::empty_like(x);
  const at::Tensor cos = at::randn({9, 8});
  const at::Tensor sin = at::randn({9, 8});
  EXPECT_FALSE(gpu_rope_applies(out, x, cos, sin));
  EXPECT_FALSE(gpu_rope_applies(out, at::Tensor(), cos, sin));
  EXPECT_THROW(gpu_rope_into(out, x, cos, sin, /*transpose=*/false), std::invalid_argument);
}

}  // namespace
}  // namespace ftbench::model
