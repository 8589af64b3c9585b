// Device facts from the vendor runtimes without LibTorch: name, architecture, multiprocessors,
// memory, clocks, driver and runtime versions, free memory. Asked through small modules that
// link the CUDA runtime (libftbench_cuda_query.so) or the HIP runtime (libftbench_hip_query.so),
// built from src/device/query_modules whenever CMake finds the toolkit and loaded here with dlopen,
// so that both compile, link and run on any machine, with or without a GPU or a GPU build of
// LibTorch. The C interface between the two sides is device/gpu_query_abi.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "device/facts.h"
#include "device/gpu_query_abi.h"
#include "util/error.h"

namespace ftbench::device {

enum class GpuRuntime { kCuda, kHip };

// "cuda" / "rocm": the backend the runtime serves, as the report and the spec name it.
const char* backend_name(GpuRuntime runtime);
// "FTBENCH_CUDA_QUERY_LIBRARY" / "FTBENCH_HIP_QUERY_LIBRARY": the module's path, tried first.
const char* module_env_variable(GpuRuntime runtime);
// "libftbench_cuda_query.so" / "libftbench_hip_query.so".
const char* module_file_name(GpuRuntime runtime);

// The module is missing, cannot be loaded, is not an ftbench query module, or a call failed.
class GpuQueryError : public RunFailed {
 public:
  using RunFailed::RunFailed;
};

// One device. Optional figures are unset when the runtime does not give them.
struct GpuDevice {
  int64_t index = 0;
  std::string name;        // "NVIDIA H200"
  std::string arch;        // "sm_90", "gfx942:sramecc+:xnack-"
  std::string pci_bus_id;  // "0000:3b:00.0"; "" when unknown
  std::optional<int64_t> memory_bytes;
  std::optional<int64_t> multiprocessor_count;  // SMs (CUDA) or compute units (ROCm)
  std::optional<int64_t> l2_cache_bytes;
  std::optional<int64_t> clock_khz;  // peak SM / shader clock
  std::optional<int64_t> memory_clock_khz;
  std::optional<int64_t> memory_bus_width_bits;
};

struct GpuMemoryInfo {
  int64_t free_bytes = 0;   // device-wide: what no process or library holds
  int64_t total_bytes = 0;  // the device's memory as the runtime reports it
  int64_t used_bytes() const { return total_bytes - free_bytes; }
};

// What a device's power sensor offers (the module's management library: NVML, AMD SMI).
struct PowerSensor {
  std::string library;        // "libnvidia-ml.so.1", "libamd_smi.so"
  std::string energy_source;  // "nvmlDeviceGetTotalEnergyConsumption"; "" without a counter
  std::string power_source;   // "nvmlDeviceGetPowerUsage"; "" without power
};

// One reading of a device's sensor. Unset figures were not read; `error` says why when the
// whole read failed.
struct PowerSample {
  std::optional<int64_t> energy_millijoules;  // cumulative, arbitrary origin
  std::optional<int64_t> power_milliwatts;
  std::string error;
};

// Where to look for a module: the override alone when it is set (a wrong path is an error, not
// a reason to take another module); else next to the running program, in ../lib/ftbench from
// it (installed), and where this build put it, in that order.
struct ModuleSearch {
  std::string override_path;    // the module_env_variable's value; "" when unset
  std::string executable_path;  // the running program; "" when unknown
  std::string build_path;       // the module this build made; "" when it made none
};

// The paths `search` says to try, in order, without duplicates.
std::vector<std::string> module_candidates(GpuRuntime runtime, const ModuleSearch& search);

// This process's search: the environment variable, /proc/self/exe and the build's path.
ModuleSearch default_module_search(GpuRuntime runtime);

// Driver and runtime version numbers as text: CUDA 13000 -> "13.0", HIP 60342134 ->
// "6.3.42134". "" for 0 (no driver) or a negative number.
std::string format_runtime_version(GpuRuntime runtime, int version);

// The kernel module's version from the text of /proc/driver/nvidia/version ("NVRM version:
// NVIDIA UNIX x86_64 Kernel Module  580.65.06  ..." -> "580.65.06"); "" when absent.
std::string parse_nvidia_kernel_module_version(const std::string& text);

// The GPU kernel driver's version on this host: /proc/driver/nvidia/version (CUDA) or
// /sys/module/amdgpu/version (ROCm, DKMS driver only); "" when there is none.
std::string kernel_driver_version(GpuRuntime runtime);

// A loaded query module. Not copyable; the library stays loaded until the process ends (a
// vendor runtime cannot be unloaded safely). Calls are not thread-safe: one thread at a time.
class GpuQuery {
 public:
  // Loads the first module `search` finds. Throws GpuQueryError when none is found (naming
  // every path tried and the variable that overrides them), when one cannot be loaded, is not
  // an ftbench query module of this interface version, or drives the other runtime.
  static std::unique_ptr<GpuQuery> load(GpuRuntime runtime, const ModuleSearch& search);
  static std::unique_ptr<GpuQuery> load(GpuRuntime runtime) {
    return load(runtime, default_module_search(runtime));
  }

  ~GpuQuery();
  GpuQuery(const GpuQuery&) = delete;
  GpuQuery& operator=(const GpuQuery&) = delete;

  GpuRuntime runtime() const { return runtime_; }
  const std::string& path() const { return path_; }  // the module loaded

  // Devices visible to the process, or 0 and the runtime's reason ("cudaErrorNoDevice: no
  // CUDA-capable device is detected"): no driver, no device, devices hidden.
  struct Count {
    int64_t devices = 0;
    std::string error;  // "" when the runtime answered
  };
  Count device_count() const;

  // Formatted as format_runtime_version does; "" when unknown.
  struct Versions {
    std::string driver;
    std::string runtime;
  };
  Versions versions() const;

  // Throw GpuQueryError with the runtime's message (index out of range, device lost).
  GpuDevice device(int64_t index) const;
  GpuMemoryInfo memory_info(int64_t index) const;

  // Opens device `index`'s power sensor: throws GpuQueryError with the library's reason ("cuda
  // device 0 power: libnvidia-ml.so.1: cannot open shared object file ...").
  PowerSensor power_sensor(int64_t index) const;
  // Reads it now, after power_sensor(index) succeeded. Never throws. The one call that one other
  // thread (the energy sampler's) may make while this one makes the others.
  PowerSample read_power(int64_t index) const;

 private:
  struct Api;
  GpuQuery(GpuRuntime runtime, std::string path, std::unique_ptr<Api> api);

  GpuRuntime runtime_;
  std::string path_;
  std::unique_ptr<Api> api_;
};

// The facts about device `index` as `query` answers them: name, arch, memory,
// multiprocessors, cache, clocks, bus, PCI id, driver, runtime and kernel driver versions.
// backend, count and index stay the caller's. Throws GpuQueryError when the device cannot be
// asked.
void fill_device_info(const GpuQuery& query, int64_t index, DeviceFacts& info);

// What one runtime says about this machine, for `ftbench devices`: never throws.
struct GpuSurvey {
  enum class Status { kDevices, kNoDevice, kNoModule };
  struct Device {
    GpuDevice properties;
    std::optional<GpuMemoryInfo> memory;  // unset when the query failed
  };
  GpuRuntime runtime = GpuRuntime::kCuda;
  Status status = Status::kNoModule;
  std::string message;      // why there is no device, or the loader's error; "" with devices
  std::string module_path;  // the module that answered; "" without one
  std::string driver_version;
  std::string runtime_version;
  std::string kernel_driver_version;
  std::vector<Device> devices;
};

// Loads the module as `search` says and asks it everything, memory included (which makes the
// runtime create a context on every device).
GpuSurvey survey_gpus(GpuRuntime runtime, const ModuleSearch& search);

}  // namespace ftbench::device
