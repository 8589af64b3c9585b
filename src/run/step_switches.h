// ftbench's step switches in the environment, read by the run: FTBENCH_FUSED_BLOCKS (the fused
// blocks, on unless "0") and FTBENCH_GPU_KERNELS (model/torch/gpu_kernels.h); check_step_switches
// (run_benchmark.h) checks both before a run starts.
#pragma once

namespace ftbench::run::detail {

// FTBENCH_FUSED_BLOCKS: unset or "1" on, "0" off (BadInput otherwise).
bool fused_blocks_from_environment();

}  // namespace ftbench::run::detail
