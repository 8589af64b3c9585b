// The data fingerprint: which tokens the model was trained on, as one hash.
#pragma once

#include <cstdint>
#include <string>

#include "data/dataset.h"

namespace ftbench::data {

struct DataStats {
  int64_t examples = 0;
  int64_t tokens = 0;       // over all examples
  int64_t loss_tokens = 0;  // tokens carrying loss, over all examples
  std::string fingerprint;  // lower-case hex SHA-256, layout below
};

// Hashes every example in index order (shuffling is a function of the spec's seed, which the
// spec fingerprint covers). Per example, little-endian: int64 token count, int64 index of the
// first token that carries loss (0 when `train_on_input`, else the prompt length) — or, for an
// example with a loss_mask, int64 -1 followed by the mask (one byte per token) — then each token
// id as int32. The hash is streamed; no copy of the data set is made.
DataStats fingerprint(const Dataset& dataset, bool train_on_input);

}  // namespace ftbench::data
