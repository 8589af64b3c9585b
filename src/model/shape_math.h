// Pure arithmetic on model shapes: parameter counts and FLOPs per token.
//
// Torch-free (built into ftbench_core) so that `ftbench validate`, the report and the cost
// tools can use it without LibTorch. The formulas are written out in docs/methodology.md; keep
// the two in step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "spec/run_spec.h"
#include "util/text/spellings.h"

namespace ftbench::model {

struct ParamCounts {
  int64_t base = 0;            // every parameter of the model without adapters
  int64_t embedding = 0;       // token embedding table (counted once when tied)
  int64_t base_matmul = 0;     // parameters used in matmuls: all linear weights incl. the LM head
  int64_t lora = 0;            // adapter parameters (A and B of every target) = trainable
  int64_t lora_in_blocks = 0;  // adapter parameters inside decoder layers (recomputed)
  int64_t block_matmul = 0;    // linear weights inside decoder layers (recomputed)
  int64_t total() const { return base + lora; }
};

// nullopt when a count does not fit in 64 bits (a shape no validated spec has: spec/limits.h
// bounds every size).
std::optional<ParamCounts> try_count_parameters(const spec::ModelSpec& model,
                                                const spec::LoraSpec& lora);
// The same for a validated spec; throws std::overflow_error when a count does not fit.
ParamCounts count_parameters(const spec::ModelSpec& model, const spec::LoraSpec& lora);

enum class FlopFormula {
  kLoraFrozenBase,  // forward 2N, input grads 2N, LoRA weight grads; see methodology.md
  kSixN,            // the common 6N count (all weights treated as trained)
  // What the hardware executes: lora_frozen_base's GEMMs with causal attention's half square
  // where the kernel skips the masked blocks (`causal_half`), plus the recompute when on.
  kExecuted,
};
inline constexpr text::Spelling<FlopFormula> kFlopFormulaSpellings[] = {
    {FlopFormula::kLoraFrozenBase, "lora_frozen_base"},
    {FlopFormula::kSixN, "six_n"},
    {FlopFormula::kExecuted, "executed"}};

std::string to_string(FlopFormula formula);

// Training FLOPs for one token of a sequence of `seq_len` tokens (forward + backward), with
// causal attention counted over the full sequence as in PaLM/Megatron (12 * L * d * s for a
// full training step under 6N). `recompute` adds the forward of the decoder layers again
// (activation checkpointing), which gives hardware FLOPs rather than model FLOPs.
// kExecuted: attention's products over the causal half (s (s + 1) / 2 of the s^2 scores) where
// `causal_half` (flash, memory-efficient, cuDNN and ftbench's blocked kernels skip the masked
// blocks; the math kernel computes them all); the other formulas ignore it.
double training_flops_per_token(const spec::ModelSpec& model, const ParamCounts& counts,
                                int64_t seq_len, FlopFormula formula, bool recompute,
                                bool causal_half = false);

// Whether the attention kernel (report execution.attention_kernel) skips causal attention's
// masked blocks: every fused kernel and ftbench's blocked one; not "math", nor "unknown".
bool attention_skips_masked_blocks(std::string_view attention_kernel);

}  // namespace ftbench::model
