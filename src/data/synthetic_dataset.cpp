#include "data/synthetic_dataset.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "data/rng.h"
#include "spec/choices.h"

namespace ftbench::data {
namespace {

constexpr std::array<const char*, 48> kWords = {
    "alpha",   "bright", "cloud",  "delta",  "engine", "forest",  "garden", "harbor",
    "island",  "jungle", "kettle", "lemon",  "marble", "nickel",  "orange", "pepper",
    "quartz",  "river",  "silver", "timber", "umbra",  "velvet",  "willow", "xenon",
    "yellow",  "zephyr", "anchor", "basket", "candle", "dragon",  "ember",  "falcon",
    "glacier", "hollow", "ivory",  "jasper", "kernel", "lantern", "meadow", "needle",
    "oyster",  "pillow", "quiver", "rocket", "saddle", "tunnel",  "upland", "vortex"};

// Text of exactly `bytes` bytes made by cycling through `words` separated by spaces.
std::string fill_with_words(const std::vector<std::string>& words, size_t bytes) {
  std::string out;
  out.reserve(bytes + 16);
  size_t i = 0;
  while (out.size() < bytes) {
    if (!out.empty()) out.push_back(' ');
    out += words[i++ % words.size()];
  }
  out.resize(bytes);
  return out;
}

}  // namespace

int64_t synthetic_example_length(const spec::DataSpec& spec, int64_t index) {
  SplitMix64 rng(stream_seed(spec.seed, static_cast<uint64_t>(index), /*purpose=*/1));
  const int64_t lo = std::min(spec.min_tokens, spec.seq_len);
  const int64_t hi = std::min(spec.max_tokens, spec.seq_len);
  int64_t length = hi;
  if (spec.length_distribution == ftbench::spec::choice::length_distribution::kUniform) {
    length = lo + static_cast<int64_t>(rng.below(static_cast<uint64_t>(hi - lo + 1)));
  } else if (spec.length_distribution == ftbench::spec::choice::length_distribution::kLognormal) {
    const double x = spec.lognormal_median_tokens * std::exp(spec.lognormal_sigma * rng.normal());
    length = static_cast<int64_t>(std::llround(x));
  }
  return std::clamp(length, lo, hi);
}

SyntheticDataset::SyntheticDataset(const spec::DataSpec& spec, const Tokenizer& tokenizer) {
  examples_.reserve(static_cast<size_t>(spec.num_examples));
  for (int64_t i = 0; i < spec.num_examples; ++i) {
    SplitMix64 rng(stream_seed(spec.seed, static_cast<uint64_t>(i), /*purpose=*/2));
    const int64_t length = std::max<int64_t>(synthetic_example_length(spec, i), 2);
    const int64_t body = length - 2;  // BOS and EOS
    // At least one prompt and one response byte when there is room for both.
    const int64_t prompt_body =
        body < 2 ? body
                 : std::clamp<int64_t>(
                       static_cast<int64_t>(std::llround(spec.prompt_fraction * double(body))), 1,
                       body - 1);
    const int64_t response_body = body - prompt_body;

    std::vector<std::string> words(3 + rng.below(6));
    for (std::string& w : words) w = kWords[rng.below(kWords.size())];
    // "Repeat: w1 w2 ..." then the same words as the response; cut to the exact lengths.
    const std::string head = "Repeat: ";
    std::string prompt_text =
        static_cast<size_t>(prompt_body) > head.size()
            ? head + fill_with_words(words, static_cast<size_t>(prompt_body) - head.size())
            : fill_with_words(words, static_cast<size_t>(prompt_body));
    const std::string response_text = fill_with_words(words, static_cast<size_t>(response_body));

    std::vector<int32_t> prompt_ids = tokenizer.encode(prompt_text);
    std::vector<int32_t> response_ids = tokenizer.encode(response_text);
    Example ex;
    ex.tokens.reserve(prompt_ids.size() + response_ids.size() + 2);
    ex.tokens.push_back(tokenizer.bos_id());
    ex.tokens.insert(ex.tokens.end(), prompt_ids.begin(), prompt_ids.end());
    ex.prompt_tokens = static_cast<int64_t>(ex.tokens.size());
    ex.tokens.insert(ex.tokens.end(), response_ids.begin(), response_ids.end());
    ex.tokens.push_back(tokenizer.eos_id());
    examples_.push_back(std::move(ex));
  }
  description_ = fmt::format("synthetic(seed={}, examples={}, lengths={})", spec.seed,
                             spec.num_examples, spec.length_distribution);
}

}  // namespace ftbench::data
