// libftbench_cuda_query.so: device facts through the CUDA runtime API, for device::GpuQuery
// (the C interface is include/ftbench/device/gpu_query_abi.h).
//
// Built whenever CMake finds a CUDA toolkit, whatever LibTorch the build uses, so that this
// code compiles and runs in CI on a machine without a GPU (it then reports the runtime's "no
// driver" error). Linked against the static CUDA runtime: the module needs only the driver
// (libcuda.so.1, which the runtime opens itself when first called) and no libcudart on the
// library path. It keeps a runtime of its own beside LibTorch's; both use the driver's primary
// context of a device, so they see the same device and the same memory.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

#include "ftbench/device/gpu_query_abi.h"

namespace {

int fail(cudaError_t status, char* error, size_t error_size) {
  if (error != nullptr && error_size > 0) {
    std::snprintf(error, error_size, "%s: %s", cudaGetErrorName(status),
                  cudaGetErrorString(status));
  }
  return static_cast<int>(status);
}

int64_t attribute(cudaDeviceAttr attr, int index) {
  int value = 0;
  return cudaDeviceGetAttribute(&value, attr, index) == cudaSuccess ? value : -1;
}

}  // namespace

extern "C" {

int ftbench_gpu_query_abi_version(void) { return FTBENCH_GPU_QUERY_ABI_VERSION; }

const char* ftbench_gpu_query_runtime(void) { return "cuda"; }

int ftbench_gpu_device_count(int* count, char* error, size_t error_size) {
  *count = 0;
  int n = 0;
  const cudaError_t status = cudaGetDeviceCount(&n);
  if (status != cudaSuccess) return fail(status, error, error_size);
  *count = n;
  return 0;
}

int ftbench_gpu_versions(int* driver_version, int* runtime_version, char* error,
                         size_t error_size) {
  *driver_version = 0;
  *runtime_version = 0;
  cudaError_t status = cudaDriverGetVersion(driver_version);  // succeeds with 0 without a driver
  if (status != cudaSuccess) return fail(status, error, error_size);
  status = cudaRuntimeGetVersion(runtime_version);
  if (status != cudaSuccess) return fail(status, error, error_size);
  return 0;
}

int ftbench_gpu_device_properties(int index, ftbench_gpu_device* out, char* error,
                                  size_t error_size) {
  std::memset(out, 0, sizeof(*out));
  cudaDeviceProp prop{};
  const cudaError_t status = cudaGetDeviceProperties(&prop, index);
  if (status != cudaSuccess) return fail(status, error, error_size);
  std::snprintf(out->name, sizeof(out->name), "%s", prop.name);
  std::snprintf(out->arch, sizeof(out->arch), "sm_%d%d", prop.major, prop.minor);
  if (cudaDeviceGetPCIBusId(out->pci_bus_id, sizeof(out->pci_bus_id), index) != cudaSuccess) {
    out->pci_bus_id[0] = '\0';
  }
  out->total_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  // Attributes rather than cudaDeviceProp fields: CUDA 13 removed clockRate and
  // memoryClockRate from the struct; every version has the attributes.
  out->multiprocessor_count = attribute(cudaDevAttrMultiProcessorCount, index);
  out->l2_cache_bytes = attribute(cudaDevAttrL2CacheSize, index);
  out->clock_khz = attribute(cudaDevAttrClockRate, index);
  out->memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, index);
  out->memory_bus_width_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, index);
  return 0;
}

int ftbench_gpu_memory_info(int index, int64_t* free_bytes, int64_t* total_bytes, char* error,
                            size_t error_size) {
  *free_bytes = -1;
  *total_bytes = -1;
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != index) {
    const cudaError_t status = cudaSetDevice(index);
    if (status != cudaSuccess) return fail(status, error, error_size);
  }
  size_t free_now = 0;
  size_t total = 0;
  const cudaError_t status = cudaMemGetInfo(&free_now, &total);
  if (status != cudaSuccess) return fail(status, error, error_size);
  *free_bytes = static_cast<int64_t>(free_now);
  *total_bytes = static_cast<int64_t>(total);
  return 0;
}

}  // extern "C"
