#include "data/pretokenized.h"

namespace ftbench::data {

std::vector<int32_t> PretokenizedIds::encode(std::string_view) const {
  throw TokenizerError(
      "data.tokenizer is none: only pre-tokenized records (input_ids, data.format: tokenized) can "
      "be read; give a tokenizer for text");
}

std::string PretokenizedIds::decode(const std::vector<int32_t>& ids) const {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(ids[i]);
  return out + "]";
}

}  // namespace ftbench::data
