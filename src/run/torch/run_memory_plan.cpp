#include "run/torch/run_memory_plan.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "device/host_info.h"
#include "device/host_memory.h"
#include "device/torch/dtype.h"
#include "device/torch/torch_version.h"
#include "economics/plan/activation_checkpointing.h"
#include "economics/plan/plan.h"
#include "model/torch/sdpa.h"
#include "run/step_switches.h"
#include "spec/choices.h"

namespace ftbench::run::detail {

plan::MemoryOptions run_memory_options(const RunContext& context, const Components& built,
                                       const std::string& checkpointing, bool fused_blocks) {
  const at::Device device = built.backend->device();
  plan::MemoryOptions options;
  options.attention = model::blocked_attention_on(device) ? plan::AttentionKernel::kBlocked
                                                          : plan::AttentionKernel::kFused;
  options.gpu = !device.is_cpu();
  options.libtorch_1 = !FTBENCH_TORCH_AT_LEAST(2, 0);
  options.fused_blocks = fused_blocks;
  // LibTorch's RMSNorm kernel (keeping its input in the model dtype) on CUDA and ROCm from 2.8.
  options.rms_norm_kernel = !device.is_cpu() && FTBENCH_TORCH_AT_LEAST(2, 8);
  const dist::Communicator* group = built.shard_group(context);
  options.shard_ranks = built.sharded != nullptr ? built.sharded->ranks()
                        : group != nullptr       ? group->size()
                                                 : 1;
  options.prefetched_batches = context.spec.train.grad_accum_steps;
  // Before the model is built (a run that failed earlier): the spec's policy.
  if (!checkpointing.empty()) options.activation_checkpointing = checkpointing;
  const spec::ModelSpec& m = context.spec.model;
  // The K/V heads as the run's attention reads them (the fused op's own choice).
  options.kernel_reads_shared_kv = model::fused_sdpa_reads_shared_kv(
      device, device::scalar_type_of(m.dtype), m.n_heads, m.n_kv_heads, m.dim / m.n_heads);
  return options;
}

CheckpointingPolicy resolve_checkpointing(const RunContext& context, const StartState& start,
                                          const Components& built) {
  namespace cp = spec::choice::checkpointing;
  CheckpointingPolicy chosen{context.spec.model.activation_checkpointing, std::nullopt};
  if (chosen.policy != cp::kAuto) return chosen;
  // A resumed run keeps what auto chose for the run it continues: one policy for every step.
  if (start.resume && start.resume->execution &&
      !start.resume->execution->activation_checkpointing.empty()) {
    chosen.policy = start.resume->execution->activation_checkpointing;
    chosen.choice = start.resume->execution->checkpointing_choice;
    spdlog::info("model.activation_checkpointing auto: {}, as the run it resumes chose",
                 chosen.policy);
    return chosen;
  }
  const at::Device device = built.backend->device();
  // A GPU: its memory less the plan's headroom, with the plan's device overheads. A CPU: the
  // host's physical memory (or the address-space limit, when lower) less the same headroom.
  std::optional<double> total;
  if (!device.is_cpu()) {
    if (const std::optional<int64_t> bytes = built.backend->memory().device_total_bytes) {
      total = static_cast<double>(*bytes);
    }
  } else {
    const int64_t host = device::host_info().memory_bytes;
    if (host > 0) total = static_cast<double>(host);
    if (const std::optional<uint64_t> limit = device::address_space_limit()) {
      // Under an address-space limit, what the process has mapped already (LibTorch, its
      // libraries, thread stacks: about 1 GB) is not there for tensors.
      double room = static_cast<double>(*limit);
      if (std::ifstream statm("/proc/self/statm"); statm) {
        double pages = 0.0;
        if (statm >> pages) room -= pages * static_cast<double>(sysconf(_SC_PAGE_SIZE));
      }
      room = std::max(room, 0.0);
      total = std::min(total.value_or(room), room);
    }
  }
  if (!total) {
    chosen.policy = cp::kFull;
    spdlog::info(
        "model.activation_checkpointing auto: full (the device's memory is unknown, so "
        "the least memory)");
    return chosen;
  }
  plan::MemoryOptions options =
      run_memory_options(context, built, "", fused_blocks_from_environment());
  options.activation_checkpointing.reset();
  const plan::DeviceOverheads overheads = plan::default_gpu_overheads();
  // The composite forms (FTBENCH_FUSED_BLOCKS=0) have no selective cache points.
  const plan::CheckpointingChoice choice =
      plan::choose_checkpointing(context.spec, options, device.is_cpu() ? nullptr : &overheads,
                                 *total * (1.0 - plan::kHeadroom),
                                 /*selective_allowed=*/options.fused_blocks);
  chosen.policy = choice.policy;
  report::CheckpointingNeeds needs;
  needs.usable_bytes = static_cast<int64_t>(std::llround(choice.usable_bytes));
  needs.fits = choice.fits;
  for (const plan::PolicyEstimate& c : choice.candidates) {
    needs.needed_bytes.emplace_back(c.policy, static_cast<int64_t>(std::llround(c.needed_bytes)));
  }
  chosen.choice = needs;
  spdlog::info("model.activation_checkpointing auto: {}", choice.reason);
  return chosen;
}

void record_memory_prediction(const RunContext& context, const Components& built,
                              const std::string& checkpointing, report::Measured& measured) {
  if (!built.backend) return;
  report::MemoryPrediction& prediction = measured.memory_prediction.emplace();
  try {
    const plan::MemoryOptions options = run_memory_options(
        context, built, checkpointing, !measured.execution || measured.execution->fused_blocks);
    const plan::MemoryEstimate estimate = plan::estimate_memory(context.spec, options);
    prediction.peak_bytes = static_cast<int64_t>(std::llround(estimate.peak_bytes));
    prediction.basis = fmt::format(
        "ftbench plan: {} attention{}, dropout masks {}, peak at {}",
        plan::to_string(options.attention),
        !estimate.kv_heads_repeated   ? ""
        : *estimate.kv_heads_repeated ? " on repeated K/V heads"
                                      : " reading the shared K/V heads",
        options.gpu || options.fused_blocks ? "1 byte" : "in the input dtype", estimate.peak_at);
  } catch (const std::exception& e) {
    prediction.basis = std::string("no prediction: ") + e.what();
  }
}

}  // namespace ftbench::run::detail
