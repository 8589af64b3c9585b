// Training data read from a file: Alpaca, chat, plain-text or pre-tokenized records, as a JSON
// array or as JSON lines, tokenised into Examples with their loss targets. Torch-free.
//
// Record formats (keys other than these are ignored):
// - alpaca:    {"instruction": str, "input": str (optional; "" or null = none), "output": str}
//   tokens = [BOS] + encode(prompt) + encode(output) + [EOS], prompt and response encoded
//   apart (as torchtune does), prompt by the Alpaca template (kAlpacaPrompt*, below); the
//   targets are the response and EOS.
// - chat:      {"messages": [{"role": "system"|"user"|"assistant", "content": str}, ...]}
//   Llama 3 format: [BOS] then per message <|start_header_id|> encode(role)
//   <|end_header_id|> encode("\n\n") encode(trimmed content) <|eot_id|>; the content is trimmed of
//   ASCII white space at both ends, as Meta's, Hugging Face's and torchtune's Llama 3 formats
//   do. No EOS is added: <|eot_id|> ends each turn. Targets (Example::loss_mask): the content
//   and <|eot_id|> of every assistant message. At least one assistant message is needed.
// - text:      {"text": str}; tokens = [BOS] + encode(text) + [EOS]; every token but BOS is a
//   target.
// - tokenized: {"input_ids": [int, ...], "labels": [int, ...] (optional)}; the ids are used as
//   they are (no BOS or EOS added) and must lie in [0, vocab_size). labels, when given, hold one
//   entry per id, each -100 (not a target) or the id itself (Hugging Face's convention; a
//   label that differs from its id cannot be expressed by an Example and is an error).
//   Without labels every token but the first is a target.
// Token 0 is never a target (nothing predicts it). With `train_on_input` every token but the
// first is a target, in every format (prompt_tokens = 1, no loss_mask).
//
// File layout is told from the content, not the name (Hugging Face's to_json() writes JSON
// lines to ".json" files): a file whose first non-blank character is '[' is one JSON array of
// records; otherwise it is JSON lines, one record object per line, blank lines ignored. A UTF-8
// byte order mark at the start is skipped.
//
// Errors are DataError, worded "<file>:<line>: <field>: expected X, found Y": JSON lines name
// the line (1-based); array files name the line where the record starts and its 0-based index,
// "<file>:<line>: record [<index>]: ...". Bad records (malformed JSON line, invalid UTF-8,
// missing keys, wrong types, unknown roles, token ids out of range, no target tokens) are
// skipped and counted under on_error = "skip"; file-level problems (unreadable file, a
// malformed JSON array file, a tokenizer without the chat format's special tokens, a format
// that cannot be told, bad options, no usable example left) always throw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/dataset.h"
#include "data/tokenizer.h"
#include "spec/limits.h"
#include "util/error.h"

namespace ftbench::data {

// Training data that cannot be used: the message names the file, the line (1-based) or record
// index, the field, and what was expected against what was found.
class DataError : public BadInput {
 public:
  using BadInput::BadInput;
  // `spec_key`: the spec key that names the file, when it is not the training data's
  // (data.path): "data.validation_path".
  DataError(const std::string& message, std::string spec_key)
      : BadInput(message), spec_key_(std::move(spec_key)) {}
  const std::string& spec_key() const { return spec_key_; }

 private:
  std::string spec_key_;
};

// The Alpaca prompt templates, with {instruction} and {input} filled in. These are the
// tatsu-lab/alpaca data set's and torchtune's wording; Stanford Alpaca's train.py ends the
// prompt at "### Response:" without the final newline.
inline constexpr std::string_view kAlpacaPromptWithInput =
    "Below is an instruction that describes a task, paired with an input that provides further "
    "context. Write a response that appropriately completes the request.\n\n"
    "### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n";
inline constexpr std::string_view kAlpacaPromptNoInput =
    "Below is an instruction that describes a task. Write a response that appropriately "
    "completes the request.\n\n### Instruction:\n{instruction}\n\n### Response:\n";

// The Alpaca prompt for one record: the no-input template when `input` is empty.
std::string alpaca_prompt(std::string_view instruction, std::string_view input);

struct ValidationOptions;
struct TrainValidationData;

struct DataFileOptions {
  std::string path;
  // "alpaca", "chat", "text", "tokenized", or "auto": decided by the first record that is a
  // JSON object, from its keys, in this order: messages -> chat, input_ids -> tokenized,
  // instruction -> alpaca, text -> text.
  std::string format = "auto";
  // Train on the prompt too: every token but the first is a target (see above).
  bool train_on_input = false;
  // Longest example in tokens (BOS and EOS included); >= 2.
  int64_t max_tokens = 2048;
  // What to do with a longer example: "truncate" keeps its first max_tokens tokens (the EOS or
  // final <|eot_id|> is lost) and counts it in DataFileStats::truncated; "drop" leaves it out
  // and counts it in dropped_too_long. A truncated example left without a target token is
  // dropped and counted in dropped_too_long too.
  std::string too_long = "truncate";
  // Bad records: "fail" throws DataError at the first; "skip" leaves them out, counted in
  // DataFileStats::skipped_bad with the first few messages kept.
  std::string on_error = "fail";
  // At most this many examples (after bad and too-long ones are left out); 0 = all. The whole
  // file is still read and checked.
  int64_t max_examples = 0;
  // Which max_examples: "first" in file order, or "random": a uniform sample by `seed`
  // (kept in file order).
  std::string subset = "first";
  // Seeds the random subset and the validation hold-out (load_train_validation). The draw is a
  // portable SplitMix64 Fisher-Yates shuffle, the same on every machine.
  uint64_t seed = 0;
  // Start alpaca, chat and text examples with the tokenizer's BOS where its rule adds one
  // (Tokenizer::adds_bos: Llama 2 and 3 do, GPT-2 does not).
  bool add_bos = true;
  // End alpaca and text examples with the tokenizer's EOS, whatever its add_eos_token says, as
  // Stanford Alpaca's training code does (torchtune for text completion; its Alpaca examples end
  // in <|eot_id|> plus an <|end_of_text|> kept out of the loss): the model learns where an
  // answer stops. A tokenizer without EOS is a DataError. Chat turns end with <|eot_id|>.
  bool add_eos = true;
  // Pre-tokenized ids (format tokenized) must be below this: the model's embedding rows
  // (model.vocab_size), not the tokenizer's vocabulary. 0: the tokenizer's vocabulary.
  int64_t vocab_size = 0;
  // The most examples and tokens held in memory (spec/limits.h): past them, an endless stream
  // of valid records is a DataError naming the file.
  int64_t max_examples_held = spec::kMaxDataExamples;
  int64_t max_tokens_held = spec::kMaxDataTokens;
};

// What reading a file gave. The first four counts are over the whole file, so that for one
// data set records == skipped_bad + dropped_too_long + not_selected + examples; the rest are
// over this data set's examples. Lengths are in tokens.
struct DataFileStats {
  int64_t records = 0;           // JSON lines (blank ones aside) or array elements
  int64_t skipped_bad = 0;       // bad records left out (on_error = "skip")
  int64_t dropped_too_long = 0;  // see DataFileOptions::too_long
  int64_t not_selected = 0;      // usable, but left out by max_examples or held out for the
                                 // other side of a validation split
  int64_t examples = 0;          // in this data set
  int64_t truncated = 0;         // examples of this data set cut to max_tokens
  int64_t tokens = 0;            // sum of example lengths
  int64_t loss_tokens = 0;       // target tokens (is_target with train_on_input = false)
  double mean_length = 0.0;
  // Median and 90th percentile of the lengths by stats::percentile (numpy's default "linear"
  // interpolation, so they may fall between two lengths).
  double p50_length = 0.0;
  double p90_length = 0.0;
  int64_t max_length = 0;
  double masked_fraction = 0.0;  // 1 - loss_tokens / tokens: share of tokens without loss
  // The messages of the first kMaxSkipMessages bad records skipped, with file and line.
  std::vector<std::string> skip_messages;
  static constexpr std::size_t kMaxSkipMessages = 10;
};

class FileDataset final : public Dataset {
 public:
  // Reads, checks and tokenises options.path. Throws DataError (see the top of this file).
  // `tokenizer` is used only during construction.
  FileDataset(const DataFileOptions& options, const Tokenizer& tokenizer);
  // The same from the file's content, `text`, instead of reading options.path; options.path
  // still names the file in messages (fuzz/data_file.cpp feeds it).
  static std::unique_ptr<FileDataset> from_text(std::string_view text,
                                                const DataFileOptions& options,
                                                const Tokenizer& tokenizer);

  int64_t size() const override { return static_cast<int64_t>(examples_.size()); }
  const Example& at(int64_t index) const override { return examples_.at(index); }
  // "file(path=data.jsonl, format=alpaca, n=100)", with the subset and split when there are.
  std::string description() const override { return description_; }
  const DataFileStats& stats() const { return stats_; }
  // The format used: the one asked for, or the one "auto" chose.
  const std::string& format() const { return format_; }

 private:
  FileDataset() = default;  // for load_train_validation, which fills the members
  // Reads `text` when given, else options.path.
  FileDataset(const DataFileOptions& options, const Tokenizer& tokenizer,
              std::optional<std::string_view> text);
  friend TrainValidationData load_train_validation(const DataFileOptions&, const ValidationOptions&,
                                                   const Tokenizer&);

  std::vector<Example> examples_;
  DataFileStats stats_;
  std::string format_;
  std::string description_;
};

// Where validation examples come from: at most one of the two.
struct ValidationOptions {
  // In (0, 1): hold out ceil(fraction * n) of the n training examples (after max_examples; a
  // product within 1e-9 of an integer counts as that integer), drawn by DataFileOptions::seed;
  // both sides keep file order. 0 = no hold-out.
  double fraction = 0.0;
  // A separate file, read with the training options (format, limits, on_error) but in full:
  // max_examples does not apply. Empty = none.
  std::string path;
};

struct TrainValidationData {
  std::unique_ptr<FileDataset> train;
  std::unique_ptr<FileDataset> validation;  // null when `validation` asks for none
};

// The training data set and, as `validation` asks, a validation one. Throws DataError, also
// when both a fraction and a path are given, when the fraction is outside [0, 1), or when the
// hold-out would leave no training example.
TrainValidationData load_train_validation(const DataFileOptions& options,
                                          const ValidationOptions& validation,
                                          const Tokenizer& tokenizer);

}  // namespace ftbench::data
