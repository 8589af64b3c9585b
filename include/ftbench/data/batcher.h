// Turns a data set into micro-batches of tensors: shuffling per epoch, right padding, shifted
// labels with the loss mask.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "ftbench/data/dataset.h"

namespace ftbench::data {

enum class Padding { kLongest, kMaxLength };

struct MicroBatch {
  at::Tensor input_ids;       // [B, S] int64 on the target device
  at::Tensor labels;          // [B, S] int64: next token, or -100 where no loss is taken
  at::Tensor loss_positions;  // [loss_tokens] int64: flat indices r * S + t with a label
  int64_t real_tokens = 0;    // non-padding tokens
  int64_t padded_tokens = 0;  // B * S
  int64_t loss_tokens = 0;    // labels != -100
};

struct BatcherOptions {
  int64_t micro_batch_size = 1;
  int64_t seq_len = 0;  // examples are truncated to this many tokens
  Padding padding = Padding::kLongest;
  bool shuffle = true;
  bool train_on_prompt = false;
  uint64_t seed = 0;
  int32_t pad_id = 0;
};

class Batcher {
 public:
  // `dataset` must outlive the batcher.
  Batcher(const Dataset& dataset, BatcherOptions options, at::Device device);

  // Micro-batches per epoch (a last partial micro-batch is dropped).
  int64_t batches_per_epoch() const;
  // Micro-batch `index` (0-based) of epoch `epoch` (1-based); the order of an epoch is a
  // deterministic permutation of (seed, epoch).
  MicroBatch get(int64_t epoch, int64_t index);

 private:
  const std::vector<int64_t>& order(int64_t epoch);
  const Dataset& dataset_;
  BatcherOptions options_;
  at::Device device_;
  int64_t order_epoch_ = -1;
  std::vector<int64_t> order_;
};

}  // namespace ftbench::data
