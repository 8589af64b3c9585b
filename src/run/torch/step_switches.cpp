#include "run/step_switches.h"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "model/torch/gpu_kernels.h"
#include "run/run_benchmark.h"
#include "spec/choices.h"
#include "util/error.h"
#include "util/text/messages.h"

namespace ftbench::run::detail {

bool fused_blocks_from_environment() {
  const char* value = std::getenv("FTBENCH_FUSED_BLOCKS");
  if (value == nullptr || std::string_view(value) == "1") return true;
  if (std::string_view(value) == "0") return false;
  throw BadInput(
      "FTBENCH_FUSED_BLOCKS: expected 0 (the step as before the fused blocks, a "
      "benchmark aid) or 1, found " +
      text::quoted(value));
}

}  // namespace ftbench::run::detail

namespace ftbench::run {

void check_step_switches(const spec::RunSpec& spec) {
  const bool fused = detail::fused_blocks_from_environment();
  try {
    (void)model::gpu_kernels_enabled_from_environment();
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  }
  if (!fused && spec.model.activation_checkpointing == spec::choice::checkpointing::kSelective) {
    throw BadInput(
        "FTBENCH_FUSED_BLOCKS=0 runs the step's composite forms, which keep no GEMM outputs for "
        "model.activation_checkpointing selective: use full or none with it");
  }
}

}  // namespace ftbench::run
