// libftbench_cuda_query.so: device facts through the CUDA runtime API, for device::GpuQuery
// (the C interface is src/device/gpu_query_abi.h).
//
// Built whenever CMake finds a CUDA toolkit, whatever LibTorch the build uses, so that this
// code compiles and runs in CI on a machine without a GPU (it then reports the runtime's "no
// driver" error). Linked against the static CUDA runtime: the module needs only the driver
// (libcuda.so.1, which the runtime opens itself when first called) and no libcudart on the
// library path. It keeps a runtime of its own beside LibTorch's; both use the driver's primary
// context of a device, so they see the same device and the same memory.
//
// Board power and energy come from NVML, opened with dlopen when first asked and never linked,
// so that the module loads where the driver's libnvidia-ml.so.1 is missing (containers started
// without the NVIDIA utility libraries). The NVML types are declared here as NVML's header
// (nvml.h) defines them: return codes are an int enum, devices an opaque pointer.
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <mutex>

#include "device/gpu_query_abi.h"

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

int fail_text(const char* text, char* error, size_t error_size) {
  if (error != nullptr && error_size > 0) std::snprintf(error, error_size, "%s", text);
  return 1;
}

constexpr int kNvmlSuccess = 0;
constexpr int kMaxDevices = 64;
constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";
constexpr const char* kEnergyCall = "nvmlDeviceGetTotalEnergyConsumption";  // mJ, Volta and later
constexpr const char* kPowerCall = "nvmlDeviceGetPowerUsage";               // mW

using NvmlDevice = void*;
struct Nvml {
  bool tried = false;
  char error[512] = {0};  // why NVML cannot be used; "" when it can
  int (*init)() = nullptr;
  const char* (*error_string)(int) = nullptr;
  int (*handle_by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  int (*total_energy)(NvmlDevice, unsigned long long*) = nullptr;
  int (*power_usage)(NvmlDevice, unsigned int*) = nullptr;
  NvmlDevice devices[kMaxDevices] = {nullptr};
};

std::mutex nvml_lock;
Nvml nvml;  // guarded by nvml_lock; loaded once per process and never unloaded

const char* nvml_error(int status) {
  return nvml.error_string != nullptr ? nvml.error_string(status) : "unknown NVML error";
}

template <class Fn>
bool nvml_symbol(void* lib, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(lib, name));
  if (fn == nullptr) {
    std::snprintf(nvml.error, sizeof(nvml.error), "%s: no %s", kNvmlLibrary, name);
  }
  return fn != nullptr;
}

void load_nvml() {
  nvml.tried = true;
  void* lib = ::dlopen(kNvmlLibrary, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::snprintf(nvml.error, sizeof(nvml.error), "%s", ::dlerror());
    return;
  }
  if (!nvml_symbol(lib, "nvmlErrorString", nvml.error_string) ||
      !nvml_symbol(lib, "nvmlInit_v2", nvml.init) ||
      !nvml_symbol(lib, "nvmlDeviceGetHandleByPciBusId_v2", nvml.handle_by_pci_bus_id) ||
      !nvml_symbol(lib, kEnergyCall, nvml.total_energy) ||
      !nvml_symbol(lib, kPowerCall, nvml.power_usage)) {
    return;
  }
  const int status = nvml.init();
  if (status != kNvmlSuccess) {
    std::snprintf(nvml.error, sizeof(nvml.error), "nvmlInit_v2: %s", nvml_error(status));
  }
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

int ftbench_gpu_power_open(int index, ftbench_gpu_power_sensor* out, char* error,
                           size_t error_size) {
  std::memset(out, 0, sizeof(*out));
  if (index < 0 || index >= kMaxDevices) {
    return fail(cudaErrorInvalidDevice, error, error_size);
  }
  // NVML numbers devices its own way (all of them, PCI order); the runtime's index is mapped
  // through the PCI bus id, which CUDA_VISIBLE_DEVICES does not change.
  char bus_id[32] = {0};
  const cudaError_t status = cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), index);
  if (status != cudaSuccess) return fail(status, error, error_size);
  const std::lock_guard<std::mutex> lock(nvml_lock);
  if (!nvml.tried) load_nvml();
  if (nvml.error[0] != '\0') return fail_text(nvml.error, error, error_size);
  NvmlDevice device = nullptr;
  int nv = nvml.handle_by_pci_bus_id(bus_id, &device);
  if (nv != kNvmlSuccess) {
    char text[256];
    std::snprintf(text, sizeof(text), "nvmlDeviceGetHandleByPciBusId_v2(%s): %s", bus_id,
                  nvml_error(nv));
    return fail_text(text, error, error_size);
  }
  unsigned long long millijoules = 0;
  unsigned int milliwatts = 0;
  const int energy_status = nvml.total_energy(device, &millijoules);
  const int power_status = nvml.power_usage(device, &milliwatts);
  if (energy_status != kNvmlSuccess && power_status != kNvmlSuccess) {
    char text[384];
    std::snprintf(text, sizeof(text), "%s: %s; %s: %s", kEnergyCall, nvml_error(energy_status),
                  kPowerCall, nvml_error(power_status));
    return fail_text(text, error, error_size);
  }
  nvml.devices[index] = device;
  std::snprintf(out->library, sizeof(out->library), "%s", kNvmlLibrary);
  if (energy_status == kNvmlSuccess) {
    std::snprintf(out->energy_source, sizeof(out->energy_source), "%s", kEnergyCall);
  }
  if (power_status == kNvmlSuccess) {
    std::snprintf(out->power_source, sizeof(out->power_source), "%s", kPowerCall);
  }
  return 0;
}

int ftbench_gpu_power_read(int index, ftbench_gpu_power_reading* out, char* error,
                           size_t error_size) {
  out->energy_millijoules = -1;
  out->power_milliwatts = -1;
  const std::lock_guard<std::mutex> lock(nvml_lock);
  if (index < 0 || index >= kMaxDevices || nvml.devices[index] == nullptr) {
    return fail_text("the device's power sensor was not opened", error, error_size);
  }
  unsigned long long millijoules = 0;
  unsigned int milliwatts = 0;
  const int energy_status = nvml.total_energy(nvml.devices[index], &millijoules);
  const int power_status = nvml.power_usage(nvml.devices[index], &milliwatts);
  if (energy_status != kNvmlSuccess && power_status != kNvmlSuccess) {
    char text[384];
    std::snprintf(text, sizeof(text), "%s: %s", kPowerCall, nvml_error(power_status));
    return fail_text(text, error, error_size);
  }
  // Millijoules since the driver loaded: 2^63 mJ would take a 1 kW board 292 million years.
  if (energy_status == kNvmlSuccess) out->energy_millijoules = static_cast<int64_t>(millijoules);
  if (power_status == kNvmlSuccess) out->power_milliwatts = milliwatts;
  return 0;
}

}  // extern "C"
