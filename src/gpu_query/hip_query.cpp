// libftbench_hip_query.so: device facts through the HIP runtime API (AMD platform), for
// device::GpuQuery (the C interface is include/ftbench/device/gpu_query_abi.h).
//
// Built whenever CMake finds hip_runtime_api.h and libamdhip64 (Debian's libamdhip64-dev, or a
// ROCm install), whatever LibTorch the build uses, so that this code compiles and runs in CI on
// a machine without a GPU (it then reports hipErrorNoDevice). Plain host code: g++ with
// __HIP_PLATFORM_AMD__, no hipcc. In a ROCm build of LibTorch the module must link the same
// libamdhip64 as LibTorch (same soname), so that both share one runtime.
#include <hip/hip_runtime_api.h>

#include <cstdio>
#include <cstring>

#include "ftbench/device/gpu_query_abi.h"

namespace {

int fail(hipError_t status, char* error, size_t error_size) {
  if (error != nullptr && error_size > 0) {
    const char* name = hipGetErrorName(status);
    const char* text = hipGetErrorString(status);
    // Some HIP versions return the name as the string.
    if (std::strcmp(name, text) == 0) {
      std::snprintf(error, error_size, "%s", name);
    } else {
      std::snprintf(error, error_size, "%s: %s", name, text);
    }
  }
  return static_cast<int>(status);
}

int64_t attribute(hipDeviceAttribute_t attr, int index) {
  int value = 0;
  return hipDeviceGetAttribute(&value, attr, index) == hipSuccess ? value : -1;
}

}  // namespace

extern "C" {

int ftbench_gpu_query_abi_version(void) { return FTBENCH_GPU_QUERY_ABI_VERSION; }

const char* ftbench_gpu_query_runtime(void) { return "hip"; }

int ftbench_gpu_device_count(int* count, char* error, size_t error_size) {
  *count = 0;
  int n = 0;
  const hipError_t status = hipGetDeviceCount(&n);
  if (status != hipSuccess) return fail(status, error, error_size);
  *count = n;
  return 0;
}

int ftbench_gpu_versions(int* driver_version, int* runtime_version, char* error,
                         size_t error_size) {
  *driver_version = 0;
  *runtime_version = 0;
  hipError_t status = hipDriverGetVersion(driver_version);
  if (status != hipSuccess) return fail(status, error, error_size);
  status = hipRuntimeGetVersion(runtime_version);
  if (status != hipSuccess) return fail(status, error, error_size);
  return 0;
}

int ftbench_gpu_device_properties(int index, ftbench_gpu_device* out, char* error,
                                  size_t error_size) {
  std::memset(out, 0, sizeof(*out));
  hipDeviceProp_t prop{};
  const hipError_t status = hipGetDeviceProperties(&prop, index);
  if (status != hipSuccess) return fail(status, error, error_size);
  std::snprintf(out->name, sizeof(out->name), "%s", prop.name);
  std::snprintf(out->arch, sizeof(out->arch), "%s", prop.gcnArchName);
  if (hipDeviceGetPCIBusId(out->pci_bus_id, sizeof(out->pci_bus_id), index) != hipSuccess) {
    out->pci_bus_id[0] = '\0';
  }
  out->total_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  out->multiprocessor_count = attribute(hipDeviceAttributeMultiprocessorCount, index);
  out->l2_cache_bytes = attribute(hipDeviceAttributeL2CacheSize, index);
  out->clock_khz = attribute(hipDeviceAttributeClockRate, index);
  out->memory_clock_khz = attribute(hipDeviceAttributeMemoryClockRate, index);
  out->memory_bus_width_bits = attribute(hipDeviceAttributeMemoryBusWidth, index);
  return 0;
}

int ftbench_gpu_memory_info(int index, int64_t* free_bytes, int64_t* total_bytes, char* error,
                            size_t error_size) {
  *free_bytes = -1;
  *total_bytes = -1;
  int current = -1;
  if (hipGetDevice(&current) != hipSuccess || current != index) {
    const hipError_t status = hipSetDevice(index);
    if (status != hipSuccess) return fail(status, error, error_size);
  }
  size_t free_now = 0;
  size_t total = 0;
  const hipError_t status = hipMemGetInfo(&free_now, &total);
  if (status != hipSuccess) return fail(status, error, error_size);
  *free_bytes = static_cast<int64_t>(free_now);
  *total_bytes = static_cast<int64_t>(total);
  return 0;
}

}  // extern "C"
