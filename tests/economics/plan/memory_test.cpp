// The memory plan's terms (economics/plan/memory.h), exact for a spec worked by hand: the tiny
// preset (dim 64, 2 layers, 4 heads / 2 K/V heads, ffn 176, vocabulary 320), LoRA rank 8 on q and
// v, fp32, micro-batch 4 x 128 tokens, two micro-batches per step. The per-layer figures (4,916 and
// 5,688 bytes per token on the blocked CPU attention) are also what the CPU tensor counter
// measured for each layer of that model (docs/methodology.md, "Memory plan").
#include "economics/plan/memory.h"

#include <gtest/gtest.h>

#include "spec/spec_loader.h"

namespace ftbench::plan {
namespace {

spec::RunSpec tiny(const std::string& data_extra = "") {
  return spec::load_spec_from_string(
      "model: {preset: tiny, dtype: fp32}\n"
      "lora: {rank: 8, targets: [q, v]}\n"
      "data: {seq_len: 128, max_tokens: 128, prompt_fraction: 0.5" +
          data_extra +
          "}\n"
          "train: {micro_batch_size: 4, grad_accum_steps: 2}\n",
      "tiny.yaml");
}

double item(const std::vector<MemoryItem>& items, const std::string& name) {
  for (const MemoryItem& i : items) {
    if (i.name == name) return i.bytes;
  }
  ADD_FAILURE() << "no item " << name;
  return -1;
}

// The CPU path of LibTorch 1.13 (Debian 12), with the composite layers these figures were
// measured on (FTBENCH_FUSED_BLOCKS=0); the fused blocks' figures are below.
MemoryOptions cpu_blocked() {
  MemoryOptions o;
  o.attention = AttentionKernel::kBlocked;
  o.gpu = false;
  o.libtorch_1 = true;
  o.fused_blocks = false;
  o.prefetched_batches = 2;
  return o;
}

TEST(MemoryPlan, HeldBytesAreWeightsTablesAdaptersStateAndBatches) {
  const MemoryEstimate m = estimate_memory(tiny(), cpu_blocked());
  EXPECT_EQ(m.tokens, 512);
  EXPECT_EQ(m.loss_tokens, 256);
  EXPECT_EQ(item(m.held, "base weights (frozen)"), 133440.0 * 4);
  EXPECT_EQ(item(m.held, "rotary tables"), 2.0 * 128 * 16 * 4);
  EXPECT_EQ(item(m.held, "adapters"), 3584.0 * 4);  // 2 layers x 8 x ((64 + 64) + (64 + 32))
  EXPECT_EQ(item(m.held, "adapter gradients"), 3584.0 * 4);
  EXPECT_EQ(item(m.held, "AdamW moments"), 2 * 3584.0 * 4);
  // ids and labels (512 each) and 256 loss positions in int64, in use and 2 prefetched.
  EXPECT_EQ(item(m.held, "micro-batches"), (512.0 * 2 + 256) * 8 * 3);
  EXPECT_EQ(m.held_bytes, 533760.0 + 16384 + 14336 * 2 + 28672 + 30720);
}

TEST(MemoryPlan, BlockedAttentionActivationsPerLayerAsCounted) {
  const MemoryEstimate m = estimate_memory(tiny(), cpu_blocked());
  // First layer 4,916 bytes a token, second 5,688 (its input carries a gradient).
  EXPECT_EQ(item(m.activations, "activations kept for backward"), (4916.0 + 5688.0) * 512);
  EXPECT_EQ(item(m.activations, "final norm"), 260.0 * 512);
  EXPECT_EQ(item(m.activations, "loss"), 256.0 * 64 * 4);
  EXPECT_EQ(m.peak_bytes, m.held_bytes + m.activation_bytes + m.transient.bytes);
}

TEST(MemoryPlan, CheckpointingKeepsLayerInputsAndRecomputesOneLayer) {
  MemoryOptions o = cpu_blocked();
  o.activation_checkpointing = "full";
  const MemoryEstimate m = estimate_memory(tiny(), o);
  EXPECT_EQ(item(m.activations, "layer inputs (activation checkpointing)"), 2.0 * 512 * 64 * 4);
  EXPECT_EQ(m.peak_at, "backward, a layer recomputed");
  const MemoryEstimate whole = estimate_memory(tiny(), cpu_blocked());
  EXPECT_LT(m.peak_bytes, whole.peak_bytes);
}

TEST(MemoryPlan, FusedAttentionKeepsQkvOutputAndLogSumExp) {
  MemoryOptions o = cpu_blocked();
  o.attention = AttentionKernel::kFused;
  o.libtorch_1 = false;
  const MemoryEstimate m = estimate_memory(tiny(), o);
  // Per token and layer, in place of the blocked kernel's copies and probabilities: q (256),
  // k (128), v (128; adapted, so not a view keeping the whole projection output), the output
  // (256) and its log-sum-exp (4 heads x 4 bytes); each norm with a gradient 260 (no extra
  // copy after LibTorch 1.x).
  const double first = 320 + (256 + 128 + 128) + 256 + 16 + 260 + 1408 + 704;
  const double second = first + 260;
  EXPECT_EQ(item(m.activations, "activations kept for backward"), (first + second) * 512);
  EXPECT_EQ(m.kv_heads_repeated, std::optional<bool>(false));
  EXPECT_EQ(estimate_memory(tiny(), cpu_blocked()).kv_heads_repeated, std::nullopt);
}

TEST(MemoryPlan, PackedRowsOnAFusedKernelKeepTheMaskAndRepeatedKv) {
  MemoryOptions o = cpu_blocked();
  o.attention = AttentionKernel::kFused;
  o.libtorch_1 = false;
  const MemoryEstimate packed = estimate_memory(tiny(", padding: pack"), o);
  // k and v repeated to 4 heads (256 each), the [B, 1, S, S] fp32 mask (128 x 4 a token).
  const double first = 320 + (256 + 256 + 256) + 256 + 16 + 128 * 4 + 260 + 1408 + 704;
  const double second = first + 260;
  EXPECT_EQ(item(packed.activations, "activations kept for backward"), (first + second) * 512);
  EXPECT_EQ(packed.kv_heads_repeated, std::optional<bool>(true));
}

TEST(MemoryPlan, AKernelWithoutGqaKeepsKvRepeatedToEveryHead) {
  MemoryOptions o = cpu_blocked();
  o.attention = AttentionKernel::kFused;
  o.kernel_reads_shared_kv = false;
  o.libtorch_1 = false;
  const MemoryEstimate m = estimate_memory(tiny(), o);
  // k and v repeated to 4 heads (256 bytes a token each) in place of 128: what the CPU counter
  // measured for each layer of this model on LibTorch 2.6 (3,732 and 3,992 bytes a token).
  const double first = 320 + (256 + 256 + 256) + 256 + 16 + 260 + 1408 + 704;
  EXPECT_EQ(first, 3732);
  const double second = first + 260;
  EXPECT_EQ(item(m.activations, "activations kept for backward"), (first + second) * 512);
  EXPECT_EQ(m.kv_heads_repeated, std::optional<bool>(true));
}

// The fused blocks on a GPU (model/torch/fused_blocks.h): a bf16 base with fp32 adapters on every
// projection, dropout, LibTorch's RMSNorm kernel, flash attention reading the shared K/V heads.
TEST(MemoryPlan, FusedBlocksKeepEachInputOnceOneByteMasksAndTheQkvOutputForV) {
  const spec::RunSpec spec = spec::load_spec_from_string(
      "model: {preset: tiny, dtype: bf16}\n"
      "lora: {rank: 8, dtype: fp32, dropout: 0.1, targets: [q, k, v, o, gate, up, down]}\n"
      "data: {seq_len: 128, max_tokens: 128, prompt_fraction: 0.5}\n"
      "train: {micro_batch_size: 4, grad_accum_steps: 2}\n",
      "tiny.yaml");
  MemoryOptions o;
  o.attention = AttentionKernel::kFused;
  o.gpu = true;
  o.rms_norm_kernel = true;
  o.prefetched_batches = 2;
  const MemoryEstimate m = estimate_memory(spec, o);
  // Bytes a token (d 64, K/V 32, ffn 176; bf16 2 bytes, adapters 4, rank 8):
  // q/k/v adapters: the input 128 + 3 ranks 96 + 3 masks 192 = 416;
  // attention: q 128, k 64, the q/k/v output v views 256, the output 128, log-sum-exp 16 = 592;
  // o's adapter: 128 + 32 + 64 less its input, the kernel's output (128) = 96;
  // the MLP's norm: input 128 + 1/rms 4 = 132; gate/up adapters: 128 + 64 + 128 = 320;
  // SwiGLU: [gate | up] 704; down's adapter: 352 + 32 + 176 = 560.
  const double first = 416 + 592 + 96 + 132 + 320 + 704 + 560;
  EXPECT_EQ(first, 2820);
  const double second = first + 132;  // its input norm too (a gradient reaches it)
  EXPECT_EQ(item(m.activations, "activations kept for backward"), (first + second) * 512);
  // The composite layers keep more: an fp32 copy of the dropped input per slice among them.
  o.fused_blocks = false;
  EXPECT_GT(item(estimate_memory(spec, o).activations, "activations kept for backward"),
            (first + second) * 512);
}

TEST(MemoryPlan, ASplitBaseHoldsItsShareAndTwoWholeUnits) {
  MemoryOptions o = cpu_blocked();
  o.shard_ranks = 4;
  const MemoryEstimate m = estimate_memory(tiny(), o);
  // The largest unit is a block: 4096 + 2 x 2048 + 4096 + 3 x 11,264 = 46,080 weights (the
  // embedding table has 320 x 64 = 20,480).
  EXPECT_EQ(item(m.held, "base weights (frozen)"), 133440.0 * 4 / 4 + 2 * 46080.0 * 4);
}

TEST(MemoryPlan, DeviceBytesAddFragmentationContextAndWorkspace) {
  const MemoryEstimate m = estimate_memory(tiny(), cpu_blocked());
  DeviceOverheads o;
  o.context_bytes = 1000;
  o.workspace_bytes = 24;
  o.fragmentation = 0.5;
  EXPECT_DOUBLE_EQ(device_bytes_needed(m, o), m.peak_bytes * 1.5 + 1024);
}

}  // namespace
}  // namespace ftbench::plan
