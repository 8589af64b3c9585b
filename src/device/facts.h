// What a measurement ran on, as the device module finds it out: the host, the device, the
// software and the allow-listed settings in effect. The device module's own types: the run's
// report builder (report/records.h) maps them into the report's environment
// (report::Environment), for a run's report and a gemm result alike, so that a change to the
// report's schema does not reach the code that asks the machine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ftbench::device {

struct HostFacts {
  std::string hostname;
  std::string os;      // PRETTY_NAME of /etc/os-release, e.g. "Debian GNU/Linux 12 (bookworm)"
  std::string kernel;  // uname release
  std::string cpu_model;
  int64_t cpu_logical_cores = 0;
  int64_t memory_bytes = 0;  // physical memory
};

struct DeviceFacts {
  std::string backend;  // cpu, cuda, rocm
  std::string name;     // GPU name, or the CPU model on cpu
  std::string arch;     // "sm_90", "gfx942", or the CPU ISA level
  int64_t count = 0;    // devices visible to the process
  int64_t index = 0;    // the device used
  std::optional<int64_t> memory_bytes;
  std::optional<int64_t> multiprocessor_count;
  std::string driver_version;   // what the CUDA / HIP runtime reports for the driver
  std::string runtime_version;  // CUDA runtime / HIP version
  std::optional<int64_t> l2_cache_bytes;
  std::optional<int64_t> clock_khz;  // peak SM / shader clock
  std::optional<int64_t> memory_clock_khz;
  std::optional<int64_t> memory_bus_width_bits;
  std::string pci_bus_id;
  std::string kernel_driver_version;  // NVIDIA kernel module / amdgpu version
  std::string query_error;            // why device facts are missing; "" when none are
};

struct SoftwareFacts {
  std::string ftbench_version;
  std::string git_commit;  // "unknown" outside a git checkout
  std::string libtorch_version;
  std::string compiler;  // e.g. "GCC 12.2.0"
  std::string build_type;
  int64_t intra_op_threads = 0;
  int64_t inter_op_threads = 0;
  std::string blas;             // what LibTorch's CPU BLAS resolved to, when known
  std::string omp_wait_policy;  // OMP_WAIT_POLICY in effect ("" when unset)
  std::string host_allocator;   // C allocator tuning in effect (host_allocator.h)
  std::string libtorch_build;   // cpu, cuda, rocm
  std::string container_image;  // container_image() (recorded_environment.h); "" outside one
};

struct EnvironmentFacts {
  HostFacts host;
  DeviceFacts device;
  SoftwareFacts software;
  // name -> value of the allow-listed variables that are set, in the allow-list's order
  // (recorded_environment.h).
  std::vector<std::pair<std::string, std::string>> variables;
};

}  // namespace ftbench::device
