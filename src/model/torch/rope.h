// Rotary position embeddings (Hugging Face "rotate_half" layout) with optional Llama 3.1
// frequency scaling.
#pragma once

#include <optional>

#include <ATen/ATen.h>

#include "spec/run_spec.h"

namespace ftbench::model {

// Inverse frequencies theta^(-2i/head_dim), i in [0, head_dim/2), in fp64 on CPU, with the
// Llama 3.1 scaling applied when `scaling` is set: wavelengths above
// original_max / low_freq_factor divide by factor, below original_max / high_freq_factor stay,
// in between interpolate smoothly.
at::Tensor rope_inverse_frequencies(int64_t head_dim, double theta,
                                    const std::optional<spec::RopeScaling>& scaling);

struct RopeTables {
  at::Tensor cos;  // [positions, head_dim], model dtype, on the model device; or [B, S, head_dim]
  at::Tensor sin;  // when gathered at per-token position ids (gather_rope_tables)
};

// Tables for positions [0, positions): angle(p, j) = p * inv_freq[j mod head_dim/2].
RopeTables make_rope_tables(int64_t positions, int64_t head_dim, double theta,
                            const std::optional<spec::RopeScaling>& scaling,
                            at::TensorOptions options);

// The rows of `tables` at `position_ids` ([B, S] int64, each < the tables' positions):
// [B, S, D] tables for packed sequences, where positions restart at every example.
RopeTables gather_rope_tables(const RopeTables& tables, const at::Tensor& position_ids);

// x: [B, S, H, D] (positions on dim 1, the layout the projections produce, so the
// elementwise work runs on nearly contiguous memory); cos/sin: [>= S, D] (token t at position
// t) or [B, S, D] (gathered). Returns x * cos + rotate_half(x) * sin.
at::Tensor apply_rope(const at::Tensor& x, const RopeTables& tables);

}  // namespace ftbench::model
