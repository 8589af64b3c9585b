// The LM head and the cross-entropy in one pass over chunks of rows, so that the full
// [tokens x vocabulary] logits (and their fp32 copy) never exist at once.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace ftbench::model {

// Rows per chunk for a vocabulary of `vocab` entries: as many as keep one chunk's fp32 logits
// within `budget_bytes` (at least 1), cut down to a multiple of 256 when there are more than 256
// (a whole number of GEMM tiles: 523 rows would leave a ragged last tile in every chunk).
int64_t loss_chunk_rows(int64_t vocab, int64_t budget_bytes = int64_t{256} << 20);

// Sum over rows r with targets[r] != -100 of the cross-entropy of softmax(h[r] · weightᵀ) at
// targets[r], the logits upcast to fp32 (fp64 stays fp64). `h` [N, d] in the model dtype, `weight`
// [V, d] frozen (it must not require grad), `targets` [N] int64. The logits are made `chunk_rows`
// rows at a time; when `h` requires grad, the gradient with respect to `h` is made in the same pass
// (softmax minus one-hot, times `weight`, in `h`'s dtype: what autograd would do after the fp32
// upcast) and kept for backward, as Liger's fused linear cross-entropy does. So the extra
// memory is one chunk of logits plus one [N, d] gradient, not [N, V] in two dtypes.
//
// `fused` (the default): each chunk's log-softmax in one op (at::_log_softmax, straight from the
// bf16/fp16 logits into fp32 on a GPU), its gradient exp(log p) minus the one-hot in place, and
// ignored rows zeroed in the [rows, d] gradient rather than the [rows, V] one: four passes over
// the chunk's logits fewer. Off: the form before (logsumexp, gather, then sub, exp and a mask
// over the logits), kept as the oracle and for docs/benchmarks.md's before-and-after counts.
at::Tensor chunked_linear_cross_entropy(const at::Tensor& h, const at::Tensor& weight,
                                        const at::Tensor& targets, int64_t chunk_rows,
                                        bool fused = true);

}  // namespace ftbench::model
