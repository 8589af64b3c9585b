#include "data/fingerprint.h"

#include <algorithm>
#include <array>
#include <memory>
#include <stdexcept>

#include "util/io/sha256.h"

namespace ftbench::data {
namespace {

// `value`'s low `bytes` bytes, little-endian.
void update_le(io::Sha256& hash, uint64_t value, int bytes) {
  std::array<unsigned char, 8> buffer{};
  for (int i = 0; i < bytes; ++i) buffer[i] = static_cast<unsigned char>(value >> (8 * i));
  hash.update(buffer.data(), static_cast<std::size_t>(bytes));
}

}  // namespace

DataStats fingerprint(const Dataset& dataset, bool train_on_input) {
  DataStats stats;
  io::Sha256 hash;
  for (int64_t i = 0; i < dataset.size(); ++i) {
    const Example& example = dataset.at(i);
    const auto count = static_cast<int64_t>(example.tokens.size());
    if (example.loss_mask.empty()) {
      const int64_t loss_start = train_on_input ? 0 : std::min(example.prompt_tokens, count);
      update_le(hash, static_cast<uint64_t>(count), 8);
      update_le(hash, static_cast<uint64_t>(loss_start), 8);
    } else {
      // Marker -1 instead of a loss start, then one byte per token (docs/report-schema.md).
      update_le(hash, static_cast<uint64_t>(count), 8);
      update_le(hash, ~uint64_t{0}, 8);
      hash.update(example.loss_mask.data(), example.loss_mask.size());
    }
    for (const int32_t token : example.tokens) {
      update_le(hash, static_cast<uint32_t>(token), 4);
    }
    stats.tokens += count;
    for (int64_t t = 1; t < count; ++t) {
      if (is_target(example, t, train_on_input)) ++stats.loss_tokens;
    }
  }
  stats.examples = dataset.size();
  stats.fingerprint = hash.hex();
  return stats;
}

}  // namespace ftbench::data
