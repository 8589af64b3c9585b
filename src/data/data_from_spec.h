// The data of a run spec, read once the same way for `ftbench run` and `ftbench validate`: the
// data section's choices parsed, the reader's options, the tokenizer, the training and validation
// sets, and the step counts they make.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "data/file_dataset.h"
#include "data/packing.h"
#include "data/tokenizer.h"
#include "spec/derived.h"
#include "spec/run_spec.h"

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

// data.source and data.padding as the enums the code works with, parsed here only (the spec's
// checks refused any other name before).
enum class Source { kSynthetic, kFile };
Source source_of(const spec::DataSpec& data);
Padding padding_of(const spec::DataSpec& data);

// Throws spec::SpecError "<spec>: <key>: <path>: no such file or folder" for the first file the
// spec names that is not there: model.checkpoint, data.tokenizer, data.path (data.source: file),
// data.validation_path. What they hold is checked when they are read.
void check_named_files(const spec::RunSpec& spec);

// The data a spec names, as the run trains on it.
struct SpecData {
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<Dataset> train;           // a file's training side, or the synthetic set
  std::unique_ptr<FileDataset> validation;  // null without validation data
  std::optional<DataFileStats> file_stats;  // data.source: file
  std::string file_format;                  // data.source: file: the format read
};

// Loads the tokenizer, checks that the model holds its ids, then reads the data file (with its
// validation split or file) or generates the synthetic set. Errors of the tokenizer and of the
// data name their key: "data.tokenizer: ...", "data.path: ...".
SpecData load_spec_data(const spec::RunSpec& spec);

// The step counts from `rows` rows per epoch (examples, or packed rows with data.padding: pack)
// as the batcher splits them: micro-batches = rows / micro_batch_size. `examples` is the data
// set's size, for the message. Throws spec::SpecError on data.path (file) or data.num_examples
// (synthetic) when they make no optimizer step.
spec::DerivedCounts counts_from_rows(const spec::RunSpec& spec, int64_t rows, int64_t examples);

}  // namespace ftbench::data
