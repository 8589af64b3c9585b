// gpu_kernels.h in a build without the kernel (a CPU build of LibTorch, no CUDA or HIP compiler,
// or FTBENCH_GPU_KERNELS=OFF): rope_kernel.cu's two definitions, saying so.
#include <stdexcept>

#include "model/torch/gpu_kernels.h"

namespace ftbench::model {

bool gpu_rope_kernel_built() { return false; }

void gpu_rope_into(at::Tensor& /*out*/, const at::Tensor& /*x*/, const at::Tensor& /*cos*/,
                   const at::Tensor& /*sin*/, bool /*transpose*/) {
  throw std::invalid_argument(
      "gpu_rope_into: this build has no GPU kernels (a CPU build of LibTorch, no CUDA or HIP "
      "compiler, or -DFTBENCH_GPU_KERNELS=OFF)");
}

}  // namespace ftbench::model
