#include "device/recorded_environment.h"

#include <cstdlib>
#include <cstring>

#include "util/text/container_image.h"

namespace ftbench::device {

const std::vector<std::string_view>& recorded_variable_names() {
  // Grouped by what they steer. Add a name here and to docs/report-schema.md together.
  static const std::vector<std::string_view> names = {
      // Which devices the process sees, and in which order.
      "CUDA_VISIBLE_DEVICES",
      "CUDA_DEVICE_ORDER",
      "HIP_VISIBLE_DEVICES",
      "ROCR_VISIBLE_DEVICES",
      // Kernel launch and loading.
      "CUDA_LAUNCH_BLOCKING",
      "CUDA_MODULE_LOADING",
      "CUDA_DEVICE_MAX_CONNECTIONS",
      "HIP_LAUNCH_BLOCKING",
      "AMD_SERIALIZE_KERNEL",
      "HIP_FORCE_DEV_KERNARG",
      "GPU_MAX_HW_QUEUES",
      // LibTorch's GPU caching allocator.
      "PYTORCH_CUDA_ALLOC_CONF",
      "PYTORCH_HIP_ALLOC_CONF",
      "PYTORCH_ALLOC_CONF",
      "PYTORCH_NO_CUDA_MEMORY_CACHING",
      // GEMM selection and precision.
      "PYTORCH_TUNABLEOP_ENABLED",
      "PYTORCH_TUNABLEOP_TUNING",
      "TORCH_BLAS_PREFER_CUBLASLT",
      "TORCH_BLAS_PREFER_HIPBLASLT",
      "CUBLAS_WORKSPACE_CONFIG",
      "CUBLASLT_WORKSPACE_SIZE",
      "NVIDIA_TF32_OVERRIDE",
      "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
      // ROCm runtime memory behaviour.
      "HSA_XNACK",
      "HSA_ENABLE_SDMA",
      "HSA_NO_SCRATCH_RECLAIM",
      // Collectives (multi-device runs).
      "NCCL_ALGO",
      "NCCL_PROTO",
      "NCCL_P2P_DISABLE",
      "NCCL_IB_DISABLE",
      "NCCL_NVLS_ENABLE",
      // Host threads.
      "OMP_NUM_THREADS",
      "OMP_WAIT_POLICY",
      "OMP_PROC_BIND",
      "OMP_PLACES",
      "GOMP_SPINCOUNT",
      "KMP_BLOCKTIME",
      "KMP_AFFINITY",
      "MKL_NUM_THREADS",
      "OPENBLAS_NUM_THREADS",
      // ftbench's own step switches (docs/methodology.md, sections 20 and 21).
      "FTBENCH_FUSED_BLOCKS",
      "FTBENCH_GPU_KERNELS",
      // Host allocator.
      "GLIBC_TUNABLES",
      "MALLOC_ARENA_MAX",
      "LD_PRELOAD",
  };
  return names;
}

std::vector<std::pair<std::string, std::string>> recorded_variables(const EnvLookup& lookup) {
  std::vector<std::pair<std::string, std::string>> out;
  for (std::string_view name : recorded_variable_names()) {
    const std::string key(name);
    if (const char* value = lookup(key.c_str()); value != nullptr) out.emplace_back(key, value);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> recorded_variables() {
  return recorded_variables([](const char* name) { return std::getenv(name); });
}

std::string container_image(const EnvLookup& lookup, std::string* problem) {
  if (problem != nullptr) problem->clear();
  const char* value = lookup(kContainerImageVariable);
  if (value == nullptr) return "";
  const std::string why = text::container_image_problem(value);
  if (why.empty()) return value;
  if (problem != nullptr) {
    // The value is not repeated: a URL there may hold a credential.
    *problem = std::string(kContainerImageVariable) +
               ": expected a container image reference such as rocm/pytorch-training:v25.6, "
               "found " +
               std::to_string(std::strlen(value)) + " characters that are not one (" + why +
               "); not recorded";
  }
  return "";
}

std::string container_image(std::string* problem) {
  return container_image([](const char* name) { return std::getenv(name); }, problem);
}

}  // namespace ftbench::device
