#include "ftbench/data/batcher.h"

#include <algorithm>
#include <numeric>

#include "ftbench/data/rng.h"

namespace ftbench::data {

Batcher::Batcher(const Dataset& dataset, BatcherOptions options, at::Device device)
    : dataset_(dataset), options_(options), device_(device) {}

int64_t Batcher::batches_per_epoch() const { return dataset_.size() / options_.micro_batch_size; }

const std::vector<int64_t>& Batcher::order(int64_t epoch) {
  if (epoch == order_epoch_) return order_;
  order_.resize(static_cast<size_t>(dataset_.size()));
  std::iota(order_.begin(), order_.end(), 0);
  if (options_.shuffle) {
    // Fisher-Yates with the portable generator: the same order on every machine.
    SplitMix64 rng(stream_seed(options_.seed, static_cast<uint64_t>(epoch), /*purpose=*/3));
    for (size_t i = order_.size(); i > 1; --i) {
      std::swap(order_[i - 1], order_[rng.below(i)]);
    }
  }
  order_epoch_ = epoch;
  return order_;
}

MicroBatch Batcher::get(int64_t epoch, int64_t index) {
  const std::vector<int64_t>& ord = order(epoch);
  const int64_t b = options_.micro_batch_size;
  std::vector<const Example*> examples;
  examples.reserve(static_cast<size_t>(b));
  int64_t longest = 0;
  for (int64_t i = 0; i < b; ++i) {
    const Example& ex = dataset_.at(ord[static_cast<size_t>(index * b + i)]);
    examples.push_back(&ex);
    longest = std::max<int64_t>(longest, static_cast<int64_t>(ex.tokens.size()));
  }
  const int64_t s = options_.padding == Padding::kMaxLength
                        ? options_.seq_len
                        : std::min<int64_t>(longest, options_.seq_len);

  // Built on the host in one buffer, moved to the device in one copy each.
  at::Tensor ids = at::full({b, s}, options_.pad_id, at::kLong);
  at::Tensor labels = at::full({b, s}, -100, at::kLong);
  int64_t* ids_p = ids.data_ptr<int64_t>();
  int64_t* labels_p = labels.data_ptr<int64_t>();
  MicroBatch mb;
  std::vector<int64_t> positions;
  for (int64_t r = 0; r < b; ++r) {
    const Example& ex = *examples[static_cast<size_t>(r)];
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(ex.tokens.size()), s);
    for (int64_t t = 0; t < n; ++t) ids_p[r * s + t] = ex.tokens[static_cast<size_t>(t)];
    // Position t predicts token t + 1, where token t + 1 is a target (data/dataset.h).
    for (int64_t t = 0; t + 1 < n; ++t) {
      if (!is_target(ex, t + 1, options_.train_on_prompt)) continue;
      labels_p[r * s + t] = ex.tokens[static_cast<size_t>(t + 1)];
      positions.push_back(r * s + t);
    }
    mb.real_tokens += n;
  }
  mb.padded_tokens = b * s;
  mb.loss_tokens = static_cast<int64_t>(positions.size());
  at::Tensor pos = at::tensor(positions, at::kLong);
  const bool pin = device_.is_cuda();
  if (pin) {
    ids = ids.pin_memory();
    labels = labels.pin_memory();
    pos = pos.pin_memory();
  }
  mb.input_ids = ids.to(device_, /*non_blocking=*/pin);
  mb.labels = labels.to(device_, /*non_blocking=*/pin);
  mb.loss_positions = pos.to(device_, /*non_blocking=*/pin);
  return mb;
}

}  // namespace ftbench::data
