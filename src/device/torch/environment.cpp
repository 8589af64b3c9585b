#include "device/torch/environment.h"

#include <cstdlib>
#include <mutex>

#include <spdlog/spdlog.h>
#include <torch/version.h>

#include "device/host_allocator.h"
#include "device/host_info.h"
#include "device/recorded_environment.h"
#include "util/version.h"

namespace ftbench::device {
namespace {

const char* compiler_name() {
#if defined(__clang__)
  return "Clang " __clang_version__;
#elif defined(__GNUC__)
  return "GCC " __VERSION__;
#else
  return "unknown";
#endif
}

}  // namespace

EnvironmentFacts describe_environment(const device::Backend* backend) {
  EnvironmentFacts env;
  env.host = device::host_info();
  SoftwareFacts& sw = env.software;
  if (backend != nullptr) {
    env.device = backend->info();
    sw.intra_op_threads = backend->intra_op_threads();
    sw.inter_op_threads = backend->inter_op_threads();
  }
  sw.ftbench_version = version();
  sw.git_commit = git_commit();
  sw.libtorch_version = TORCH_VERSION;
  sw.libtorch_build = device::torch_build_backend();
  std::string image_problem;
  sw.container_image = device::container_image(&image_problem);
  // Said once a process: the environment is described at every assembly of the report (each
  // checkpoint's partial report among them).
  static std::once_flag said;
  if (!image_problem.empty()) std::call_once(said, [&] { spdlog::warn("{}", image_problem); });
  sw.compiler = compiler_name();
#ifdef NDEBUG
  sw.build_type = "release";
#else
  sw.build_type = "debug";
#endif
  sw.blas = device::resolved_blas();
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  sw.omp_wait_policy = wait_policy != nullptr ? wait_policy : "";
  sw.host_allocator = host_allocator_description();
  env.variables = device::recorded_variables();
  return env;
}

}  // namespace ftbench::device
