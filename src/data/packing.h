// Which examples share a row: the packing the batcher uses, without LibTorch, so that
// `ftbench validate` counts the same rows (and so the same steps) as `ftbench run`.
#pragma once

#include <cstdint>
#include <vector>

#include "data/dataset.h"

namespace ftbench::data {

// kLongest: one example per row, rows padded to the micro-batch's longest example.
// kMaxLength: one example per row, rows padded to seq_len.
// kPack: several whole examples per row of seq_len tokens (torchtune's PackedDataset): the
// examples are packed greedily once, in data set order (pack_greedy, below), and the
// packed rows are shuffled per epoch. Position ids restart at 0 for each example and attention
// stays inside each example.
enum class Padding { kLongest, kMaxLength, kPack };

// Row r holds the examples items[offsets[r] .. offsets[r + 1]); rows() == offsets.size() - 1.
struct PackedRows {
  std::vector<int64_t> offsets{0};
  std::vector<int64_t> items;
  int64_t rows() const { return static_cast<int64_t>(offsets.size()) - 1; }
};

// Greedy, in data set order (torchtune's PackedDataset): an example goes into the current row
// if it fits whole, otherwise it starts a new one. An example longer than `seq_len` is counted as
// `seq_len` tokens (the batcher truncates it). Throws std::invalid_argument for seq_len < 1.
PackedRows pack_greedy(const Dataset& dataset, int64_t seq_len);

// Rows per epoch: packed rows when `pack`, otherwise one example per row.
int64_t rows_per_epoch(const Dataset& dataset, bool pack, int64_t seq_len);

}  // namespace ftbench::data
