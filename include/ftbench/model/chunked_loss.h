// The LM head and the cross-entropy in one pass over chunks of rows, so that the full
// [tokens x vocabulary] logits (and their fp32 copy) never exist at once.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace ftbench::model {

// Rows per chunk for a vocabulary of `vocab` entries: as many as keep one chunk's fp32 logits
// within `budget_bytes` (at least 1).
int64_t loss_chunk_rows(int64_t vocab, int64_t budget_bytes = int64_t{256} << 20);

// Sum over rows r with targets[r] != -100 of the cross-entropy of softmax(h[r] · weightᵀ) at
// targets[r], the logits upcast to fp32 (fp64 stays fp64). `h` [N, d] in the model dtype, `weight`
// [V, d] frozen (it must not require grad), `targets` [N] int64. The logits are made `chunk_rows`
// rows at a time; when `h` requires grad, the gradient with respect to `h` is made in the same pass
// (softmax minus one-hot, times `weight`, in `h`'s dtype: what autograd would do after the fp32
// upcast) and kept for backward, as Liger's fused linear cross-entropy does. So the extra
// memory is one chunk of logits plus one [N, d] gradient, not [N, V] in two dtypes.
at::Tensor chunked_linear_cross_entropy(const at::Tensor& h, const at::Tensor& weight,
                                        const at::Tensor& targets, int64_t chunk_rows);

}  // namespace ftbench::model
