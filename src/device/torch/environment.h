// Where a measurement ran: host, device and software (device/facts.h), which a run report and
// a gemm result record as their environment (report/records.h maps them).
#pragma once

#include "device/facts.h"
#include "device/torch/backend.h"

namespace ftbench::device {

// The host (device::host_info), the backend's device and threads when `backend` is not null,
// and the software: ftbench version and commit, LibTorch, compiler, build type, BLAS, the
// OpenMP wait policy and the host allocator tuning in effect; the allow-listed environment
// variables that are set (device/recorded_environment.h).
EnvironmentFacts describe_environment(const device::Backend* backend);

}  // namespace ftbench::device
