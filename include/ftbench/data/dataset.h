// Tokenised training examples and the data set interface.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ftbench::data {

// One example as the model sees it: BOS, prompt, response, EOS. The first `prompt_tokens`
// tokens (BOS included) are context only and carry no loss unless the spec trains on prompts.
struct Example {
  std::vector<int32_t> tokens;
  int64_t prompt_tokens = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual const Example& at(int64_t index) const = 0;
  // Describes the source for the report, e.g. "synthetic(seed=1234, n=2000)".
  virtual std::string description() const = 0;
};

}  // namespace ftbench::data
