// Fuzz target: the tokenizer.json loader (data::HfTokenizer::from_json), then encode and decode
// with the tokenizer it accepts. Input: tokenizer.json text, then optionally a NUL byte and a
// tokenizer_config.json text, then optionally a NUL byte and a text to encode besides the fixed
// ones below.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "data/hf_tokenizer.h"
#include "fuzz_target.h"

namespace {

// The part of `input` from `start` to the next NUL (or the end); `start` moves past the NUL.
std::string next_part(const std::string& input, std::size_t& start) {
  if (start > input.size()) return "";
  const std::size_t end = std::min(input.find('\0', start), input.size());
  std::string part = input.substr(start, end - start);
  start = end + 1;
  return part;
}

}  // namespace

FuzzVerdict ftbench_fuzz_one(const uint8_t* data, size_t size) {
  namespace d = ftbench::data;
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::size_t start = 0;
  const std::string tokenizer_json = next_part(input, start);
  const std::string config_json = next_part(input, start);
  const std::string text = next_part(input, start);
  std::unique_ptr<d::HfTokenizer> tokenizer;
  try {
    tokenizer = d::HfTokenizer::from_json(tokenizer_json, config_json, "fuzz/tokenizer.json");
  } catch (const d::TokenizerError&) {
    return FuzzVerdict::kRejected;
  }
  tokenizer->name();
  tokenizer->token_id("<|eot_id|>");
  const std::vector<std::string> texts = {"Hello, world!",
                                          " two  spaces\tand\na newline",
                                          "caf\xC3\xA9 \xE2\x82\xAC 12345",
                                          "<|begin_of_text|>Hi<|eot_id|>",
                                          "\xF0\x9F\x98\x80",
                                          "",
                                          text};
  for (const std::string& t : texts) {
    try {
      const std::vector<int32_t> ids = tokenizer->encode(t);
      tokenizer->decode(ids);
    } catch (const d::TokenizerError&) {  // text that is not UTF-8
    }
  }
  return FuzzVerdict::kAccepted;
}
