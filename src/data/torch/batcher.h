// Turns a data set into micro-batches of tensors: shuffling per epoch, right padding or
// packing, shifted labels with the loss mask.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "data/dataset.h"
#include "data/packing.h"

namespace ftbench::data {

// Padding (kLongest, kMaxLength, kPack) is in data/packing.h.

struct MicroBatch {
  at::Tensor input_ids;       // [B, S] int64 on the target device
  at::Tensor labels;          // [B, S] int64: next token, or -100 where no loss is taken
  at::Tensor loss_positions;  // [loss_tokens] int64: flat indices r * S + t with a label
  // Packed batches only (undefined otherwise): the position of each token within its example,
  // and which example of its row it belongs to (0, 1, ... in row order; the padding at a row's
  // end is one more segment of its own). [B, S] int64 on the target device.
  at::Tensor position_ids;
  at::Tensor segment_ids;
  int64_t real_tokens = 0;    // non-padding tokens
  int64_t padded_tokens = 0;  // B * S
  int64_t loss_tokens = 0;    // labels != -100
  int64_t examples = 0;       // examples in the micro-batch (B unless packed)
};

struct BatcherOptions {
  int64_t micro_batch_size = 1;
  int64_t seq_len = 0;  // examples are truncated to this many tokens
  Padding padding = Padding::kLongest;
  bool shuffle = true;
  bool train_on_input = false;
  uint64_t seed = 0;
  int32_t pad_id = 0;
};

class Batcher {
 public:
  // `dataset` must outlive the batcher. With kPack the rows are packed here (one pass over the
  // examples' lengths).
  Batcher(const Dataset& dataset, BatcherOptions options, at::Device device);

  // Micro-batches per epoch (a last partial micro-batch is dropped). With kPack this counts
  // packed rows, so it is usually less than dataset.size() / micro_batch_size, and the same in
  // every epoch.
  int64_t batches_per_epoch() const;
  // Packed rows (kPack) or examples (otherwise) per epoch, before dropping a partial batch.
  int64_t rows_per_epoch() const;
  // Micro-batch `index` (0-based, < batches_per_epoch()) of epoch `epoch` (1-based); the order
  // of an epoch is a deterministic permutation of (seed, epoch). Throws std::out_of_range for
  // an index past the epoch.
  MicroBatch get(int64_t epoch, int64_t index);

  int64_t micro_batch_size() const { return options_.micro_batch_size; }
  // Rows per micro-batch from now on (>= 1; throws std::invalid_argument otherwise), for the
  // out-of-memory fallback. The epoch orders and packed rows do not depend on it, so with
  // size' dividing size x accumulation, micro-batches (k x accumulation') onwards at size'
  // hold exactly the rows of micro-batches (k x accumulation) onwards at size. Not thread
  // safe: nothing (no data::Prefetcher) may be using the batcher meanwhile.
  void set_micro_batch_size(int64_t size);

 private:
  const std::vector<int64_t>& order(int64_t epoch);
  MicroBatch get_packed(const std::vector<int64_t>& ord, int64_t index);
  MicroBatch to_device(at::Tensor ids, at::Tensor labels, const std::vector<int64_t>& positions,
                       at::Tensor position_ids, at::Tensor segment_ids, MicroBatch mb) const;
  const Dataset& dataset_;
  BatcherOptions options_;
  at::Device device_;
  int64_t order_epoch_ = -1;
  std::vector<int64_t> order_;
  PackedRows packed_;  // kPack only
};

}  // namespace ftbench::data
