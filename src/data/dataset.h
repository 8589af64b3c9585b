// Tokenised training examples and the data set interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ftbench::data {

// One example as the model sees it: BOS, prompt, response, EOS. Which tokens are targets of
// the loss (position t - 1 predicts token t):
// - `loss_mask` empty: tokens from `prompt_tokens` on (BOS and the prompt are context only),
//   unless the run trains on prompts;
// - `loss_mask` set (multi-turn chat, pre-tokenized labels): token t is a target where
//   loss_mask[t] == 1; same size as `tokens`; token 0 is never a target (nothing predicts it).
struct Example {
  std::vector<int32_t> tokens;
  int64_t prompt_tokens = 0;
  std::vector<uint8_t> loss_mask;
};

// Whether token `t` (t >= 1) of `example` is a loss target. `train_on_input` applies only to
// examples without a loss_mask.
inline bool is_target(const Example& example, int64_t t, bool train_on_input) {
  if (t < 1) return false;
  if (!example.loss_mask.empty()) return example.loss_mask[static_cast<std::size_t>(t)] != 0;
  return train_on_input || t >= example.prompt_tokens;
}

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual const Example& at(int64_t index) const = 0;
  // Describes the source for the report, e.g. "synthetic(seed=1234, n=2000)".
  virtual std::string description() const = 0;
};

}  // namespace ftbench::data
