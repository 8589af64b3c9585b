#include "data/packing.h"

#include <algorithm>
#include <stdexcept>

namespace ftbench::data {

PackedRows pack_greedy(const Dataset& dataset, int64_t seq_len) {
  if (seq_len < 1) throw std::invalid_argument("packing needs seq_len >= 1");
  PackedRows packed;
  int64_t used = 0;
  for (int64_t i = 0; i < dataset.size(); ++i) {
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(dataset.at(i).tokens.size()), seq_len);
    if (used > 0 && used + n > seq_len) {
      packed.offsets.push_back(static_cast<int64_t>(packed.items.size()));
      used = 0;
    }
    packed.items.push_back(i);
    used += n;
  }
  if (static_cast<int64_t>(packed.items.size()) > packed.offsets.back()) {
    packed.offsets.push_back(static_cast<int64_t>(packed.items.size()));
  }
  return packed;
}

int64_t rows_per_epoch(const Dataset& dataset, bool pack, int64_t seq_len) {
  return pack ? pack_greedy(dataset, seq_len).rows() : dataset.size();
}

}  // namespace ftbench::data
