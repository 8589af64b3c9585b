// Where a measurement ran: host, device and software, as a run report and a gemm result record
// it.
#pragma once

#include "device/torch/backend.h"
#include "report/report.h"

namespace ftbench::device {

// The host (device::host_info), the backend's device and threads when `backend` is not null,
// and the software: ftbench version and commit, LibTorch, compiler, build type, BLAS, the
// OpenMP wait policy and the host allocator tuning in effect; the allow-listed environment
// variables that are set (device/recorded_environment.h).
report::Environment describe_environment(const device::Backend* backend);

}  // namespace ftbench::device
