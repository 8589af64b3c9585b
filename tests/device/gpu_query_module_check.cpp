// ctest `cuda_query_module` / `hip_query_module`: loads the module this build made and asks it
// what a user's `ftbench devices` would. Without a GPU (CI) the runtime must answer "no
// device" with its own error ("cudaError...", "hipError..."), which proves that the module was
// compiled and linked against the real runtime and that the runtime ran. With a GPU, every
// device must have plausible facts.
//
//   ftbench_gpu_query_check <cuda|rocm> <module path, or "none" when the build made none>
//
// Exit 0: passed; 1: failed; 77: skipped, because CMake found no toolkit (on CI, ci_env.h, where
// scripts/setup.sh installs both runtimes, that is a failure instead).
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "../ci_env.h"
#include "device/gpu_query.h"

using ftbench::device::GpuQuery;
using ftbench::device::GpuRuntime;
using ftbench::device::GpuSurvey;

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "cuda") != 0 && std::strcmp(argv[1], "rocm") != 0)) {
    std::cerr << "usage: ftbench_gpu_query_check <cuda|rocm> <module path|none>\n";
    return 1;
  }
  const GpuRuntime runtime =
      std::strcmp(argv[1], "cuda") == 0 ? GpuRuntime::kCuda : GpuRuntime::kHip;
  const std::string path = argv[2];
  if (path == "none") {
    std::cout << argv[1] << ": this build has no query module (CMake found no runtime)\n";
    if (ftbench::test_env::on_ci()) {
      std::cout << "on CI that is a failure: scripts/setup.sh installs the HIP runtime and CI "
                   "machines have the CUDA toolkit in /usr/local/cuda\n";
      return 1;
    }
    return 77;
  }

  ftbench::device::ModuleSearch search;
  search.override_path = path;
  const GpuSurvey s = ftbench::device::survey_gpus(runtime, search);
  const std::string prefix = runtime == GpuRuntime::kCuda ? "cudaError" : "hipError";
  switch (s.status) {
    case GpuSurvey::Status::kNoModule:
      std::cout << "FAILED: " << s.message << "\n";
      return 1;
    case GpuSurvey::Status::kNoDevice:
      std::cout << argv[1] << ": no device (" << s.message << "); runtime " << s.runtime_version
                << "\n";
      if (s.message.rfind(prefix, 0) != 0) {
        std::cout << "FAILED: expected the runtime's own error, starting with " << prefix << "\n";
        return 1;
      }
      if (s.runtime_version.empty()) {
        std::cout << "FAILED: the runtime reported no version of its own\n";
        return 1;
      }
      return 0;
    case GpuSurvey::Status::kDevices:
      break;
  }
  const std::string arch_prefix = runtime == GpuRuntime::kCuda ? "sm_" : "gfx";
  int failures = 0;
  for (const GpuSurvey::Device& d : s.devices) {
    const auto& p = d.properties;
    std::cout << p.index << ": " << p.name << ", " << p.arch << ", "
              << p.multiprocessor_count.value_or(-1) << " multiprocessors, "
              << p.memory_bytes.value_or(-1) << " bytes\n";
    const bool ok = !p.name.empty() && p.arch.rfind(arch_prefix, 0) == 0 &&
                    p.memory_bytes.value_or(0) > 0 && p.multiprocessor_count.value_or(0) > 0 &&
                    d.memory && d.memory->total_bytes > 0 && d.memory->free_bytes >= 0;
    if (!ok) {
      std::cout << "FAILED: implausible facts for device " << p.index << "\n";
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}
