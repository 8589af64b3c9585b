#include "data/byte_tokenizer.h"

namespace ftbench::data {

std::vector<int32_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size());
  for (const char c : text) ids.push_back(static_cast<int32_t>(static_cast<unsigned char>(c)));
  return ids;
}

std::string ByteTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  text.reserve(ids.size());
  for (const int32_t id : ids) {
    if (id >= 0 && id < 256) text.push_back(static_cast<char>(id));
  }
  return text;
}

std::optional<int32_t> ByteTokenizer::token_id(std::string_view token) const {
  if (token.size() != 1) return std::nullopt;
  return static_cast<int32_t>(static_cast<unsigned char>(token[0]));
}

}  // namespace ftbench::data
