// libftbench_hip_query.so: device facts through the HIP runtime API (AMD platform), for
// device::GpuQuery (the C interface is include/ftbench/device/gpu_query_abi.h).
//
// Built whenever CMake finds hip_runtime_api.h and libamdhip64 (Debian's libamdhip64-dev, or a
// ROCm install), whatever LibTorch the build uses, so that this code compiles and runs in CI on
// a machine without a GPU (it then reports hipErrorNoDevice). Plain host code: g++ with
// __HIP_PLATFORM_AMD__, no hipcc. In a ROCm build of LibTorch the module must link the same
// libamdhip64 as LibTorch (same soname), so that both share one runtime.
//
// Board power and energy come from AMD SMI (libamd_smi.so), opened with dlopen when first
// asked and never linked. Its types are declared here as amdsmi.h (ROCm/amdsmi) defines them:
// status codes are an int enum, processors an opaque pointer, a PCI address (amdsmi_bdf_t) a
// 64-bit word (function bits 0-2, device 3-7, bus 8-15, domain 16-63), and
// amdsmi_power_info_t starts with current_socket_power and average_socket_power, uint32 watts.
#include <dlfcn.h>
#include <hip/hip_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

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

int fail_text(const char* text, char* error, size_t error_size) {
  if (error != nullptr && error_size > 0) std::snprintf(error, error_size, "%s", text);
  return 1;
}

constexpr int kSmiSuccess = 0;
constexpr uint64_t kInitAmdGpus = uint64_t{1} << 1;  // AMDSMI_INIT_AMD_GPUS
constexpr int kMaxDevices = 64;
constexpr const char* kEnergyCall = "amdsmi_get_energy_count";  // ticks x resolution (uJ)
constexpr const char* kPowerCall = "amdsmi_get_power_info";     // W

// amdsmi_power_info_t as far as it is read; the rest of the library's struct (voltages, limit,
// reserved words) lands in `rest`, sized well beyond it.
struct PowerInfo {
  uint32_t current_socket_power;
  uint32_t average_socket_power;
  uint32_t rest[126];
};

using SmiProcessor = void*;
struct Smi {
  bool tried = false;
  char library[128] = {0};
  char error[512] = {0};  // why AMD SMI cannot be used; "" when it can
  int (*init)(uint64_t) = nullptr;
  int (*status_string)(int, const char**) = nullptr;
  int (*handle_from_bdf)(uint64_t, SmiProcessor*) = nullptr;
  int (*energy_count)(SmiProcessor, uint64_t*, float*, uint64_t*) = nullptr;
  int (*power_info)(SmiProcessor, PowerInfo*) = nullptr;
  SmiProcessor devices[kMaxDevices] = {nullptr};
};

std::mutex smi_lock;
Smi smi;  // guarded by smi_lock; loaded once per process and never unloaded

const char* smi_error(int status) {
  const char* text = nullptr;
  if (smi.status_string == nullptr || smi.status_string(status, &text) != kSmiSuccess ||
      text == nullptr) {
    return "unknown AMD SMI error";
  }
  return text;
}

template <class Fn>
bool smi_symbol(void* lib, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(lib, name));
  if (fn == nullptr) std::snprintf(smi.error, sizeof(smi.error), "%s: no %s", smi.library, name);
  return fn != nullptr;
}

void load_smi() {
  smi.tried = true;
  // The loader's path first, then ROCm's own folder, which not every install puts on it.
  std::string candidates[3] = {"libamd_smi.so", "", "/opt/rocm/lib/libamd_smi.so"};
  if (const char* rocm = std::getenv("ROCM_PATH")) {
    candidates[1] = std::string(rocm) + "/lib/libamd_smi.so";
  }
  void* lib = nullptr;
  std::string first_error;
  for (const std::string& c : candidates) {
    if (c.empty()) continue;
    lib = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      std::snprintf(smi.library, sizeof(smi.library), "%s", c.c_str());
      break;
    }
    if (first_error.empty()) first_error = ::dlerror();
  }
  if (lib == nullptr) {
    std::snprintf(smi.error, sizeof(smi.error), "%s", first_error.c_str());
    return;
  }
  if (!smi_symbol(lib, "amdsmi_status_code_to_string", smi.status_string) ||
      !smi_symbol(lib, "amdsmi_init", smi.init) ||
      !smi_symbol(lib, "amdsmi_get_processor_handle_from_bdf", smi.handle_from_bdf) ||
      !smi_symbol(lib, kEnergyCall, smi.energy_count) ||
      !smi_symbol(lib, kPowerCall, smi.power_info)) {
    return;
  }
  const int status = smi.init(kInitAmdGpus);
  if (status != kSmiSuccess) {
    std::snprintf(smi.error, sizeof(smi.error), "amdsmi_init: %s", smi_error(status));
  }
}

// A socket power the library gives: 0xFFFF and 0xFFFFFFFF mean "not available".
bool valid_watts(uint32_t w) { return w != 0 && w != 0xFFFFu && w != 0xFFFFFFFFu; }

struct Read {
  int energy_status = -1;
  int power_status = -1;
  int64_t millijoules = -1;
  int64_t milliwatts = -1;
};

Read read_device(SmiProcessor device) {
  Read r;
  uint64_t ticks = 0;
  float microjoules_per_tick = 0.0f;
  uint64_t timestamp_ns = 0;
  r.energy_status = smi.energy_count(device, &ticks, &microjoules_per_tick, &timestamp_ns);
  if (r.energy_status == kSmiSuccess && microjoules_per_tick > 0.0f) {
    r.millijoules = static_cast<int64_t>(
        std::llround(static_cast<double>(ticks) * microjoules_per_tick * 1e-3));
  } else if (r.energy_status == kSmiSuccess) {
    r.energy_status = -1;  // no resolution: no energy
  }
  PowerInfo info{};
  r.power_status = smi.power_info(device, &info);
  if (r.power_status == kSmiSuccess) {
    // The current socket power where the device gives it (MI300), else the average (MI200).
    const uint32_t w = valid_watts(info.current_socket_power) ? info.current_socket_power
                                                              : info.average_socket_power;
    if (valid_watts(w)) {
      r.milliwatts = int64_t{w} * 1000;
    } else {
      r.power_status = -1;
    }
  }
  return r;
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

int ftbench_gpu_power_open(int index, ftbench_gpu_power_sensor* out, char* error,
                           size_t error_size) {
  std::memset(out, 0, sizeof(*out));
  if (index < 0 || index >= kMaxDevices) return fail(hipErrorInvalidDevice, error, error_size);
  // AMD SMI lists every GPU of the machine; the runtime's index (after HIP_VISIBLE_DEVICES) is
  // mapped through the PCI address.
  char bus_id[32] = {0};
  const hipError_t status = hipDeviceGetPCIBusId(bus_id, sizeof(bus_id), index);
  if (status != hipSuccess) return fail(status, error, error_size);
  unsigned domain = 0, bus = 0, dev = 0, function = 0;
  if (std::sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &function) != 4) {
    char text[96];
    std::snprintf(text, sizeof(text), "unreadable PCI bus id \"%s\"", bus_id);
    return fail_text(text, error, error_size);
  }
  const uint64_t bdf = (uint64_t{domain} << 16) | (uint64_t{bus & 0xFFu} << 8) |
                       (uint64_t{dev & 0x1Fu} << 3) | uint64_t{function & 0x7u};
  const std::lock_guard<std::mutex> lock(smi_lock);
  if (!smi.tried) load_smi();
  if (smi.error[0] != '\0') return fail_text(smi.error, error, error_size);
  SmiProcessor device = nullptr;
  const int found = smi.handle_from_bdf(bdf, &device);
  if (found != kSmiSuccess) {
    char text[256];
    std::snprintf(text, sizeof(text), "amdsmi_get_processor_handle_from_bdf(%s): %s", bus_id,
                  smi_error(found));
    return fail_text(text, error, error_size);
  }
  const Read r = read_device(device);
  if (r.energy_status != kSmiSuccess && r.power_status != kSmiSuccess) {
    char text[384];
    std::snprintf(text, sizeof(text), "%s: %s; %s: %s", kEnergyCall,
                  r.energy_status < 0 ? "no counter resolution" : smi_error(r.energy_status),
                  kPowerCall, r.power_status < 0 ? "no socket power" : smi_error(r.power_status));
    return fail_text(text, error, error_size);
  }
  smi.devices[index] = device;
  std::snprintf(out->library, sizeof(out->library), "%s", smi.library);
  if (r.energy_status == kSmiSuccess) {
    std::snprintf(out->energy_source, sizeof(out->energy_source), "%s", kEnergyCall);
  }
  if (r.power_status == kSmiSuccess) {
    std::snprintf(out->power_source, sizeof(out->power_source), "%s", kPowerCall);
  }
  return 0;
}

int ftbench_gpu_power_read(int index, ftbench_gpu_power_reading* out, char* error,
                           size_t error_size) {
  out->energy_millijoules = -1;
  out->power_milliwatts = -1;
  const std::lock_guard<std::mutex> lock(smi_lock);
  if (index < 0 || index >= kMaxDevices || smi.devices[index] == nullptr) {
    return fail_text("the device's power sensor was not opened", error, error_size);
  }
  const Read r = read_device(smi.devices[index]);
  if (r.energy_status != kSmiSuccess && r.power_status != kSmiSuccess) {
    char text[256];
    std::snprintf(text, sizeof(text), "%s: %s", kEnergyCall,
                  r.energy_status < 0 ? "no reading" : smi_error(r.energy_status));
    return fail_text(text, error, error_size);
  }
  out->energy_millijoules = r.millijoules;
  out->power_milliwatts = r.milliwatts;
  return 0;
}

}  // extern "C"
