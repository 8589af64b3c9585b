// libftbench_hip_query.so: device facts through the HIP runtime API (AMD platform), for
// device::GpuQuery (the C interface is src/device/gpu_query_abi.h).
//
// Built whenever CMake finds hip_runtime_api.h and libamdhip64 (Debian's libamdhip64-dev, or a
// ROCm install), whatever LibTorch the build uses, so that this code compiles and runs in CI on
// a machine without a GPU (it then reports hipErrorNoDevice). Plain host code: g++ with
// __HIP_PLATFORM_AMD__, no hipcc. In a ROCm build of LibTorch the module must link the same
// libamdhip64 as LibTorch (same soname), so that both share one runtime.
//
// Board power and energy come from AMD's management library, opened with dlopen when first
// asked and never linked: AMD SMI (libamd_smi.so, ROCm 6 and later) where it loads and
// initialises, else ROCm SMI (librocm_smi64.so, ROCm 5, and the one Debian packages). Their
// types are declared here as amdsmi.h (ROCm/amdsmi) and rocm_smi.h (ROCm/rocm_smi_lib) define
// them: status codes are int enums, AMD SMI's processors opaque pointers, ROCm SMI's devices
// indices; the layouts that changed between versions (amdsmi_power_info_t) and the PCI address
// words are read by device/amd_smi_layout.h, which is tested on every machine. Where
// rocm_smi.h is found at build time (Debian's librocm-smi-dev, a ROCm install), the
// declarations here are checked against it at compile time.
#include <dlfcn.h>
#include <hip/hip_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>

#include "device/amd_smi_layout.h"
#include "device/gpu_query_abi.h"

#if __has_include(<rocm_smi/rocm_smi.h>)
#include <rocm_smi/rocm_smi.h>
#define FTBENCH_HAVE_ROCM_SMI_HEADER 1
#endif

namespace {

namespace amd_smi = ftbench::device::amd_smi;

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

constexpr int kSmiSuccess = 0;                       // AMDSMI_STATUS_SUCCESS, RSMI_STATUS_SUCCESS
constexpr uint64_t kInitAmdGpus = uint64_t{1} << 1;  // AMDSMI_INIT_AMD_GPUS
constexpr uint64_t kRsmiInitDefault = 0;             // rsmi_init(0): the AMD GPUs
constexpr int kMaxDevices = 64;

// The calls read, as the report's energy.source names them.
constexpr const char* kAmdEnergyCall = "amdsmi_get_energy_count";     // ticks x resolution (uJ)
constexpr const char* kAmdPowerCall = "amdsmi_get_power_info";        // W
constexpr const char* kRsmiEnergyCall = "rsmi_dev_energy_count_get";  // ticks x resolution (uJ)
constexpr const char* kRsmiSocketPowerCall = "rsmi_dev_current_socket_power_get";  // uW, ROCm 6
constexpr const char* kRsmiAveragePowerCall = "rsmi_dev_power_ave_get";            // uW

// ROCm SMI's functions, as rocm_smi.h declares them (rsmi_status_t is an int-sized enum).
using RsmiInit = int (*)(uint64_t);
using RsmiStatusString = int (*)(int, const char**);
using RsmiNumDevices = int (*)(uint32_t*);
using RsmiPciId = int (*)(uint32_t, uint64_t*);
using RsmiEnergy = int (*)(uint32_t, uint64_t*, float*, uint64_t*);
using RsmiPowerAverage = int (*)(uint32_t, uint32_t, uint64_t*);
using RsmiSocketPower = int (*)(uint32_t, uint64_t*);

#ifdef FTBENCH_HAVE_ROCM_SMI_HEADER
// The declarations above against the header: same parameters, an int-sized status.
template <class R1, class... A1, class R2, class... A2>
constexpr bool same_parameters(R1 (*)(A1...), R2 (*)(A2...)) {
  return sizeof(R1) == sizeof(R2) && (sizeof...(A1) == sizeof...(A2)) &&
         (std::is_same_v<A1, A2> && ...);
}
static_assert(sizeof(rsmi_status_t) == sizeof(int) && RSMI_STATUS_SUCCESS == kSmiSuccess);
static_assert(same_parameters(&rsmi_init, RsmiInit{}));
static_assert(
    std::is_same_v<decltype(&rsmi_status_string), rsmi_status_t (*)(rsmi_status_t, const char**)>);
static_assert(same_parameters(&rsmi_num_monitor_devices, RsmiNumDevices{}));
static_assert(same_parameters(&rsmi_dev_pci_id_get, RsmiPciId{}));
static_assert(same_parameters(&rsmi_dev_energy_count_get, RsmiEnergy{}));
static_assert(same_parameters(&rsmi_dev_power_ave_get, RsmiPowerAverage{}));
#endif

enum class SmiLibrary { kNone, kAmdSmi, kRocmSmi };

struct Smi {
  bool tried = false;
  SmiLibrary which = SmiLibrary::kNone;
  char library[128] = {0};
  char error[1024] = {0};  // why neither library can be used; "" when one can
  // AMD SMI
  amd_smi::PowerInfoLayout power_layout = amd_smi::PowerInfoLayout::kUpTo24;
  int (*init)(uint64_t) = nullptr;
  int (*status_string)(int, const char**) = nullptr;
  int (*lib_version)(void*) = nullptr;
  int (*handle_from_bdf)(uint64_t, void**) = nullptr;
  int (*energy_count)(void*, uint64_t*, float*, uint64_t*) = nullptr;
  int (*power_info)(void*, void*) = nullptr;
  // ROCm SMI
  RsmiInit rsmi_init = nullptr;
  RsmiStatusString rsmi_status_string = nullptr;
  RsmiNumDevices rsmi_num_devices = nullptr;
  RsmiPciId rsmi_pci_id = nullptr;
  RsmiEnergy rsmi_energy = nullptr;
  RsmiPowerAverage rsmi_power_average = nullptr;
  RsmiSocketPower rsmi_socket_power = nullptr;  // ROCm 6 and later; nullptr before
  // The opened devices, by the runtime's index.
  struct Device {
    bool open = false;
    void* processor = nullptr;  // AMD SMI
    uint32_t index = 0;         // ROCm SMI
  } devices[kMaxDevices];
};

std::mutex smi_lock;
Smi smi;  // guarded by smi_lock; loaded once per process and never unloaded

const char* smi_error(int status) {
  const char* text = nullptr;
  auto describe = smi.which == SmiLibrary::kRocmSmi ? smi.rsmi_status_string : smi.status_string;
  if (describe == nullptr || describe(status, &text) != kSmiSuccess || text == nullptr) {
    return smi.which == SmiLibrary::kRocmSmi ? "unknown ROCm SMI error" : "unknown AMD SMI error";
  }
  return text;
}

template <class Fn>
bool smi_symbol(void* lib, const char* library, const char* name, Fn& fn, std::string& why) {
  fn = reinterpret_cast<Fn>(::dlsym(lib, name));
  if (fn == nullptr) why = std::string(library) + ": no " + name;
  return fn != nullptr;
}

// dlopen of `file` on the loader's path, then in $ROCM_PATH/lib and /opt/rocm/lib, which not
// every install puts on it; nullptr and the first error when none loads.
void* open_library(const char* file, std::string& opened, std::string& why) {
  std::string candidates[3] = {file, "", std::string("/opt/rocm/lib/") + file};
  if (const char* rocm = std::getenv("ROCM_PATH")) {
    candidates[1] = std::string(rocm) + "/lib/" + file;
  }
  for (const std::string& c : candidates) {
    if (c.empty()) continue;
    if (void* lib = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      opened = c;
      return lib;
    }
    if (why.empty()) why = ::dlerror();
  }
  return nullptr;
}

// AMD SMI: "" when loaded and initialised, else why not.
std::string load_amd_smi() {
  std::string opened;
  std::string why;
  void* lib = open_library("libamd_smi.so", opened, why);
  if (lib == nullptr) return why;
  const char* name = opened.c_str();
  if (!smi_symbol(lib, name, "amdsmi_status_code_to_string", smi.status_string, why) ||
      !smi_symbol(lib, name, "amdsmi_init", smi.init, why) ||
      !smi_symbol(lib, name, "amdsmi_get_lib_version", smi.lib_version, why) ||
      !smi_symbol(lib, name, "amdsmi_get_processor_handle_from_bdf", smi.handle_from_bdf, why) ||
      !smi_symbol(lib, name, kAmdEnergyCall, smi.energy_count, why) ||
      !smi_symbol(lib, name, kAmdPowerCall, smi.power_info, why)) {
    return why;
  }
  smi.which = SmiLibrary::kAmdSmi;
  // amdsmi_version_t grew and shrank between versions; a zeroed buffer larger than any.
  uint32_t version[16] = {0};
  if (smi.lib_version(version) != kSmiSuccess) return std::string(name) + ": no version";
  smi.power_layout = amd_smi::power_info_layout(version[0]);
  const int status = smi.init(kInitAmdGpus);
  if (status != kSmiSuccess) return std::string("amdsmi_init: ") + smi_error(status);
  std::snprintf(smi.library, sizeof(smi.library), "%s", name);
  return "";
}

// ROCm SMI: "" when loaded and initialised, else why not.
std::string load_rocm_smi() {
  std::string opened;
  std::string why;
  void* lib = open_library("librocm_smi64.so", opened, why);
  if (lib == nullptr) {
    std::string why_versioned;
    lib = open_library("librocm_smi64.so.1", opened, why_versioned);
  }
  if (lib == nullptr) return why;
  const char* name = opened.c_str();
  if (!smi_symbol(lib, name, "rsmi_status_string", smi.rsmi_status_string, why) ||
      !smi_symbol(lib, name, "rsmi_init", smi.rsmi_init, why) ||
      !smi_symbol(lib, name, "rsmi_num_monitor_devices", smi.rsmi_num_devices, why) ||
      !smi_symbol(lib, name, "rsmi_dev_pci_id_get", smi.rsmi_pci_id, why) ||
      !smi_symbol(lib, name, kRsmiEnergyCall, smi.rsmi_energy, why) ||
      !smi_symbol(lib, name, kRsmiAveragePowerCall, smi.rsmi_power_average, why)) {
    return why;
  }
  smi.rsmi_socket_power = reinterpret_cast<RsmiSocketPower>(::dlsym(lib, kRsmiSocketPowerCall));
  smi.which = SmiLibrary::kRocmSmi;
  const int status = smi.rsmi_init(kRsmiInitDefault);
  if (status != kSmiSuccess) return std::string("rsmi_init: ") + smi_error(status);
  std::snprintf(smi.library, sizeof(smi.library), "%s", name);
  return "";
}

void load_smi() {
  smi.tried = true;
  const std::string amd = load_amd_smi();
  if (amd.empty()) return;
  const std::string rocm = load_rocm_smi();
  if (rocm.empty()) return;
  smi.which = SmiLibrary::kNone;
  std::snprintf(smi.error, sizeof(smi.error), "AMD SMI: %s; ROCm SMI: %s", amd.c_str(),
                rocm.c_str());
}

struct Read {
  int energy_status = -1;  // -1: the call succeeded but gave nothing usable
  int power_status = -1;
  int64_t millijoules = -1;
  int64_t milliwatts = -1;
  const char* power_call = "";
};

int64_t millijoules_of(uint64_t ticks, float microjoules_per_tick) {
  return static_cast<int64_t>(
      std::llround(static_cast<double>(ticks) * microjoules_per_tick * 1e-3));
}

Read read_device(const Smi::Device& device) {
  Read r;
  uint64_t ticks = 0;
  float microjoules_per_tick = 0.0f;
  uint64_t timestamp_ns = 0;
  if (smi.which == SmiLibrary::kAmdSmi) {
    r.energy_status =
        smi.energy_count(device.processor, &ticks, &microjoules_per_tick, &timestamp_ns);
    // amdsmi_power_info_t is under 256 bytes in every version; the rest of the buffer is slack.
    alignas(8) unsigned char info[1024] = {0};
    r.power_status = smi.power_info(device.processor, info);
    r.power_call = kAmdPowerCall;
    if (r.power_status == kSmiSuccess) {
      const std::optional<uint32_t> w = amd_smi::socket_watts(info, sizeof(info), smi.power_layout);
      if (w) {
        r.milliwatts = int64_t{*w} * 1000;
      } else {
        r.power_status = -1;
      }
    }
  } else {
    r.energy_status = smi.rsmi_energy(device.index, &ticks, &microjoules_per_tick, &timestamp_ns);
    uint64_t microwatts = 0;
    r.power_status = -1;
    if (smi.rsmi_socket_power != nullptr) {
      r.power_status = smi.rsmi_socket_power(device.index, &microwatts);
      r.power_call = kRsmiSocketPowerCall;
    }
    if (r.power_status != kSmiSuccess || microwatts == 0) {
      r.power_status = smi.rsmi_power_average(device.index, 0, &microwatts);
      r.power_call = kRsmiAveragePowerCall;
    }
    if (r.power_status == kSmiSuccess && microwatts > 0 && microwatts < UINT64_MAX) {
      r.milliwatts = static_cast<int64_t>(microwatts / 1000);
    } else if (r.power_status == kSmiSuccess) {
      r.power_status = -1;
    }
  }
  if (r.energy_status == kSmiSuccess && microjoules_per_tick > 0.0f) {
    r.millijoules = millijoules_of(ticks, microjoules_per_tick);
  } else if (r.energy_status == kSmiSuccess) {
    r.energy_status = -1;  // no resolution: no energy
  }
  return r;
}

const char* energy_call() {
  return smi.which == SmiLibrary::kRocmSmi ? kRsmiEnergyCall : kAmdEnergyCall;
}

// The library's device for the runtime's PCI address, or why there is none.
bool find_device(const char* bus_id, unsigned domain, unsigned bus, unsigned dev, unsigned function,
                 Smi::Device& out, char* text, size_t text_size) {
  if (smi.which == SmiLibrary::kAmdSmi) {
    const int found =
        smi.handle_from_bdf(amd_smi::amd_smi_bdf(domain, bus, dev, function), &out.processor);
    if (found != kSmiSuccess) {
      std::snprintf(text, text_size, "amdsmi_get_processor_handle_from_bdf(%s): %s", bus_id,
                    smi_error(found));
      return false;
    }
    return true;
  }
  uint32_t count = 0;
  const int listed = smi.rsmi_num_devices(&count);
  if (listed != kSmiSuccess) {
    std::snprintf(text, text_size, "rsmi_num_monitor_devices: %s", smi_error(listed));
    return false;
  }
  const uint64_t want = amd_smi::rocm_smi_bdfid(domain, bus, dev, function);
  for (uint32_t i = 0; i < count; ++i) {
    uint64_t id = 0;
    if (smi.rsmi_pci_id(i, &id) == kSmiSuccess &&
        amd_smi::rocm_smi_address(id) == amd_smi::rocm_smi_address(want)) {
      out.index = i;
      return true;
    }
  }
  std::snprintf(text, text_size, "rsmi_dev_pci_id_get: none of ROCm SMI's %u devices is at %s",
                count, bus_id);
  return false;
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
  // The libraries list every GPU of the machine; the runtime's index (after HIP_VISIBLE_DEVICES)
  // is mapped through the PCI address.
  char bus_id[32] = {0};
  const hipError_t status = hipDeviceGetPCIBusId(bus_id, sizeof(bus_id), index);
  if (status != hipSuccess) return fail(status, error, error_size);
  unsigned domain = 0, bus = 0, dev = 0, function = 0;
  if (std::sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &function) != 4) {
    char text[96];
    std::snprintf(text, sizeof(text), "unreadable PCI bus id \"%s\"", bus_id);
    return fail_text(text, error, error_size);
  }
  const std::lock_guard<std::mutex> lock(smi_lock);
  if (!smi.tried) load_smi();
  if (smi.error[0] != '\0') return fail_text(smi.error, error, error_size);
  Smi::Device device;
  char text[384];
  if (!find_device(bus_id, domain, bus, dev, function, device, text, sizeof(text))) {
    return fail_text(text, error, error_size);
  }
  const Read r = read_device(device);
  if (r.energy_status != kSmiSuccess && r.power_status != kSmiSuccess) {
    std::snprintf(text, sizeof(text), "%s: %s; %s: %s", energy_call(),
                  r.energy_status < 0 ? "no counter resolution" : smi_error(r.energy_status),
                  r.power_call, r.power_status < 0 ? "no socket power" : smi_error(r.power_status));
    return fail_text(text, error, error_size);
  }
  device.open = true;
  smi.devices[index] = device;
  std::snprintf(out->library, sizeof(out->library), "%s", smi.library);
  if (r.energy_status == kSmiSuccess) {
    std::snprintf(out->energy_source, sizeof(out->energy_source), "%s", energy_call());
  }
  if (r.power_status == kSmiSuccess) {
    std::snprintf(out->power_source, sizeof(out->power_source), "%s", r.power_call);
  }
  return 0;
}

int ftbench_gpu_power_read(int index, ftbench_gpu_power_reading* out, char* error,
                           size_t error_size) {
  out->energy_millijoules = -1;
  out->power_milliwatts = -1;
  const std::lock_guard<std::mutex> lock(smi_lock);
  if (index < 0 || index >= kMaxDevices || !smi.devices[index].open) {
    return fail_text("the device's power sensor was not opened", error, error_size);
  }
  const Read r = read_device(smi.devices[index]);
  if (r.energy_status != kSmiSuccess && r.power_status != kSmiSuccess) {
    char text[256];
    std::snprintf(text, sizeof(text), "%s: %s", energy_call(),
                  r.energy_status < 0 ? "no reading" : smi_error(r.energy_status));
    return fail_text(text, error, error_size);
  }
  out->energy_millijoules = r.millijoules;
  out->power_milliwatts = r.milliwatts;
  return 0;
}

}  // extern "C"
