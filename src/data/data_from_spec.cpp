#include "ftbench/data/data_from_spec.h"

#include <fmt/format.h>

#include "ftbench/data/load_tokenizer.h"
#include "ftbench/data/pretokenized.h"
#include "ftbench/spec/spec_error.h"

namespace ftbench::data {

DataFileOptions data_file_options(const spec::RunSpec& spec) {
  const spec::DataSpec& data = spec.data;
  DataFileOptions o;
  o.vocab_size = spec.model.vocab_size;
  o.path = data.path;
  o.format = data.format;
  o.train_on_input = data.train_on_input;
  o.max_tokens = data.seq_len;
  o.too_long = data.too_long;
  o.on_error = data.on_error;
  o.max_examples = data.max_examples;
  o.subset = data.subset;
  o.seed = data.seed;
  return o;
}

std::unique_ptr<Tokenizer> tokenizer_for(const spec::RunSpec& spec) {
  if (spec.data.tokenizer == "none")
    return std::make_unique<PretokenizedIds>(spec.model.vocab_size);
  return load_tokenizer(spec.data.tokenizer);
}

void check_tokenizer_fits(const spec::RunSpec& spec, const Tokenizer& tokenizer) {
  if (tokenizer.vocab_size() <= spec.model.vocab_size) return;
  throw spec::SpecError(
      {{spec.source_path, "model.vocab_size", 0,
        fmt::format("must hold the tokenizer's {} tokens ({}), found {}", tokenizer.vocab_size(),
                    tokenizer.name(), spec.model.vocab_size)}});
}

}  // namespace ftbench::data
