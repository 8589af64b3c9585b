// Memory of a run predicted from its spec, before anything runs: the tensors one process holds
// at its peak, item by item, from what this model keeps for its backward pass.
//
// Torch-free (ftbench_core). Every term and assumption is written out in docs/methodology.md
// ("Memory plan"); keep the two in step. The prediction is checked against the exact CPU tensor
// byte counter of real runs (tests/e2e/plan_memory_test.cpp, docs/benchmarks.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spec/run_spec.h"
#include "util/text/spellings.h"

namespace ftbench::plan {

// How attention keeps its inputs for the backward pass.
enum class AttentionKernel {
  // A fused kernel (flash or memory-efficient attention: CUDA, ROCm, CPU with LibTorch >= 2.2):
  // q, k, v, the output and its log-sum-exp; packed rows add the additive mask in the model dtype.
  kFused,
  // ftbench's own CPU attention for LibTorch < 2.2 (model/torch/sdpa.h): per block of queries, the
  // softmax probabilities over the keys it sees, and contiguous copies of q, k and v.
  kBlocked,
};
inline constexpr text::Spelling<AttentionKernel> kAttentionKernelSpellings[] = {
    {AttentionKernel::kFused, "fused"}, {AttentionKernel::kBlocked, "blocked"}};
std::string to_string(AttentionKernel kernel);

struct MemoryOptions {
  AttentionKernel attention = AttentionKernel::kFused;
  // The fused kernel reads K/V heads shared by several query heads (GQA) as they are: CUDA's and
  // ROCm's flash kernels, the CPU's in LibTorch 2.15. False: they are repeated to every query
  // head (the CPU's flash kernel in LibTorch 2.6 takes no GQA). A run asks the op itself
  // (model::fused_sdpa_reads_shared_kv); the torch-free `validate` takes a CPU's as repeated.
  // Packed rows repeat them either way.
  bool kernel_reads_shared_kv = true;
  // LibTorch 1.x's autograd keeps one more [tokens, dim] fp32 tensor with every normalised input
  // that carries a gradient (measured with the CPU counter on LibTorch 1.13; not on 2.6).
  bool libtorch_1 = false;
  // Dropout on a GPU keeps a 1-byte mask (fused dropout); on the CPU a mask in the input's dtype
  // (the composite form; the fused blocks keep a 1-byte mask everywhere).
  bool gpu = true;
  // The step's fused blocks (model/torch/fused_blocks.h), as every run has them unless
  // FTBENCH_FUSED_BLOCKS=0: LoRA keeps its input once in the base dtype and 1-byte dropout masks,
  // v stays a view of the q/k/v projection's output, SwiGLU keeps the gate/up output alone.
  bool fused_blocks = true;
  // RMSNorm keeps its input in the model dtype and 1/rms (LibTorch's fused kernel: CUDA and ROCm
  // from LibTorch 2.8); false: its input in fp32 (the CPU's one-pass kernel, the composite form).
  bool rms_norm_kernel = false;
  // What is planned when it differs from the spec (0 / nullopt: the spec's).
  int64_t micro_batch_size = 0;
  // full, selective or none (never auto: economics/plan/activation_checkpointing.h plans it policy
  // by policy).
  std::optional<std::string> activation_checkpointing;
  // Ranks the frozen base is split across (distributed.shard_base): each holds 1/N of it and
  // at most two units whole at a time. 1: the whole base on every rank.
  int64_t shard_ranks = 1;
  // Micro-batches held by the data prefetcher besides the one in use.
  int64_t prefetched_batches = 1;
};

// One line of the breakdown.
struct MemoryItem {
  std::string name;  // "base weights", "activations kept for backward", ...
  double bytes = 0.0;
  std::string basis;  // how it is computed, in words and figures
};

struct MemoryEstimate {
  std::vector<MemoryItem> held;         // held through the step (weights, state, batch)
  std::vector<MemoryItem> activations;  // kept from the forward for the backward, per micro-batch
  MemoryItem transient;                 // the largest short-lived set at the peak
  double held_bytes = 0.0;
  double activation_bytes = 0.0;
  double peak_bytes = 0.0;  // held + activations + transient: what a tensor allocator counts
  std::string peak_at;      // where in the step the peak falls
  int64_t tokens = 0;       // per micro-batch (micro-batch size x seq_len)
  int64_t loss_tokens = 0;  // tokens with a label per micro-batch (estimated from the spec)
  // Fused attention with GQA: whether the K/V heads are taken as repeated to every query head
  // (packed rows, or a kernel that reads no shared heads); empty without GQA or on the blocked
  // CPU attention.
  std::optional<bool> kv_heads_repeated;
};

// The tensors one rank holds at its peak during an optimizer step of `spec` (validated), with
// every micro-batch padded to data.seq_len (the worst case of padding: longest).
MemoryEstimate estimate_memory(const spec::RunSpec& spec, const MemoryOptions& options);

// What a GPU needs beyond the tensors: stated assumptions with their sources
// (docs/methodology.md, "Memory plan").
struct DeviceOverheads {
  double context_bytes = 0.0;    // CUDA/ROCm context, kernels and library handles
  double workspace_bytes = 0.0;  // cuBLAS/hipBLASLt workspaces
  double fragmentation = 0.0;    // the caching allocator's reserve over allocated, a fraction
};
DeviceOverheads default_gpu_overheads();

// Device memory a run needs: peak * (1 + fragmentation) + context + workspace.
double device_bytes_needed(const MemoryEstimate& estimate, const DeviceOverheads& overheads);

}  // namespace ftbench::plan
