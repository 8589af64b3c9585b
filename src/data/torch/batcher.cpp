#include "data/torch/batcher.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "data/packing.h"
#include "data/rng.h"

namespace ftbench::data {
namespace {

int64_t truncated_length(const Example& ex, int64_t seq_len) {
  return std::min<int64_t>(static_cast<int64_t>(ex.tokens.size()), seq_len);
}

// Writes one example (truncated to `n` tokens) at row offset `base`: its tokens and the labels
// of the positions inside it. The example's last position gets no label, so no loss crosses into
// the next example of a packed row.
void write_example(const Example& ex, int64_t n, int64_t base, bool train_on_input, int64_t* ids_p,
                   int64_t* labels_p, std::vector<int64_t>& positions) {
  for (int64_t t = 0; t < n; ++t) ids_p[base + t] = ex.tokens[static_cast<size_t>(t)];
  // Position t predicts token t + 1, where token t + 1 is a target (data/dataset.h).
  for (int64_t t = 0; t + 1 < n; ++t) {
    if (!is_target(ex, t + 1, train_on_input)) continue;
    labels_p[base + t] = ex.tokens[static_cast<size_t>(t + 1)];
    positions.push_back(base + t);
  }
}

}  // namespace

Batcher::Batcher(const Dataset& dataset, BatcherOptions options, at::Device device)
    : dataset_(dataset), options_(options), device_(device) {
  if (options_.padding != Padding::kPack) return;
  packed_ = pack_greedy(dataset_, options_.seq_len);
}

int64_t Batcher::rows_per_epoch() const {
  return options_.padding == Padding::kPack ? packed_.rows() : dataset_.size();
}

void Batcher::set_micro_batch_size(int64_t size) {
  if (size < 1) {
    throw std::invalid_argument("micro-batch size must be >= 1, found " + std::to_string(size));
  }
  options_.micro_batch_size = size;
}

int64_t Batcher::batches_per_epoch() const { return rows_per_epoch() / options_.micro_batch_size; }

const std::vector<int64_t>& Batcher::order(int64_t epoch) {
  if (epoch == order_epoch_) return order_;
  order_.resize(static_cast<size_t>(rows_per_epoch()));
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
  if (index < 0 || index >= batches_per_epoch()) {
    throw std::out_of_range("micro-batch " + std::to_string(index) + " of an epoch of " +
                            std::to_string(batches_per_epoch()));
  }
  const std::vector<int64_t>& ord = order(epoch);
  if (options_.padding == Padding::kPack) return get_packed(ord, index);
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
    const int64_t n = truncated_length(ex, s);
    write_example(ex, n, r * s, options_.train_on_input, ids_p, labels_p, positions);
    mb.real_tokens += n;
  }
  mb.examples = b;
  return to_device(ids, labels, positions, {}, {}, std::move(mb));
}

MicroBatch Batcher::get_packed(const std::vector<int64_t>& ord, int64_t index) {
  const int64_t b = options_.micro_batch_size;
  const int64_t s = options_.seq_len;
  at::Tensor ids = at::full({b, s}, options_.pad_id, at::kLong);
  at::Tensor labels = at::full({b, s}, -100, at::kLong);
  at::Tensor position_ids = at::empty({b, s}, at::kLong);
  at::Tensor segment_ids = at::empty({b, s}, at::kLong);
  int64_t* ids_p = ids.data_ptr<int64_t>();
  int64_t* labels_p = labels.data_ptr<int64_t>();
  int64_t* pos_p = position_ids.data_ptr<int64_t>();
  int64_t* seg_p = segment_ids.data_ptr<int64_t>();
  MicroBatch mb;
  std::vector<int64_t> positions;
  for (int64_t r = 0; r < b; ++r) {
    const size_t row = static_cast<size_t>(ord[static_cast<size_t>(index * b + r)]);
    int64_t used = 0;
    int64_t segment = 0;
    for (int64_t k = packed_.offsets[row]; k < packed_.offsets[row + 1]; ++k, ++segment) {
      const Example& ex = dataset_.at(packed_.items[static_cast<size_t>(k)]);
      const int64_t n = truncated_length(ex, s);
      write_example(ex, n, r * s + used, options_.train_on_input, ids_p, labels_p, positions);
      for (int64_t t = 0; t < n; ++t) {
        pos_p[r * s + used + t] = t;
        seg_p[r * s + used + t] = segment;
      }
      used += n;
      ++mb.examples;
    }
    // The padding at the row's end: a segment of its own, so it attends only to itself and
    // no real token attends to it; its positions restart too (any value < seq_len would do).
    for (int64_t t = used; t < s; ++t) {
      pos_p[r * s + t] = t - used;
      seg_p[r * s + t] = segment;
    }
    mb.real_tokens += used;
  }
  return to_device(ids, labels, positions, position_ids, segment_ids, std::move(mb));
}

MicroBatch Batcher::to_device(at::Tensor ids, at::Tensor labels,
                              const std::vector<int64_t>& positions, at::Tensor position_ids,
                              at::Tensor segment_ids, MicroBatch mb) const {
  mb.padded_tokens = ids.numel();
  mb.loss_tokens = static_cast<int64_t>(positions.size());
  at::Tensor pos = at::tensor(positions, at::kLong);
  const bool pin = device_.is_cuda();
  auto move = [&](at::Tensor t) {
    if (!t.defined()) return t;
    if (pin) t = t.pin_memory();
    return t.to(device_, /*non_blocking=*/pin);
  };
  mb.input_ids = move(ids);
  mb.labels = move(labels);
  mb.loss_positions = move(pos);
  mb.position_ids = move(position_ids);
  mb.segment_ids = move(segment_ids);
  return mb;
}

}  // namespace ftbench::data
