// The data reader's options as the run spec's data section sets them.
#pragma once

#include <memory>

#include "ftbench/data/file_dataset.h"
#include "ftbench/data/tokenizer.h"
#include "ftbench/spec/run_spec.h"

namespace ftbench::data {

// For data.source: file. The options follow the data section of the spec; the longest example is
// data.seq_len tokens, and pre-tokenized ids must be below model.vocab_size.
DataFileOptions data_file_options(const spec::RunSpec& spec);

// The tokenizer data.tokenizer names (load_tokenizer), or for "none" (pre-tokenized data) the
// stand-in that encodes nothing and bounds ids by model.vocab_size.
std::unique_ptr<Tokenizer> tokenizer_for(const spec::RunSpec& spec);

// Throws spec::SpecError on model.vocab_size when the model's embedding cannot hold every id of
// `tokenizer`.
void check_tokenizer_fits(const spec::RunSpec& spec, const Tokenizer& tokenizer);

}  // namespace ftbench::data
