#include "data/data_from_spec.h"

#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "data/load_tokenizer.h"
#include "data/pretokenized.h"
#include "data/synthetic_dataset.h"
#include "spec/choices.h"
#include "spec/spec_error.h"
#include "spec/spec_loader.h"

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
  if (spec.data.tokenizer == spec::choice::tokenizer::kNone)
    return std::make_unique<PretokenizedIds>(spec.model.vocab_size);
  return load_tokenizer(spec.data.tokenizer);
}

void check_tokenizer_fits(const spec::RunSpec& spec, const Tokenizer& tokenizer) {
  if (tokenizer.vocab_size() <= spec.model.vocab_size) return;
  throw spec::SpecError({spec::issue_at(
      spec, "model.vocab_size",
      fmt::format("must hold the tokenizer's {} tokens ({}), found {}", tokenizer.vocab_size(),
                  tokenizer.name(), spec.model.vocab_size))});
}

Source source_of(const spec::DataSpec& data) {
  return data.source == spec::choice::data_source::kFile ? Source::kFile : Source::kSynthetic;
}

Padding padding_of(const spec::DataSpec& data) {
  if (data.padding == spec::choice::padding::kPack) return Padding::kPack;
  if (data.padding == spec::choice::padding::kMaxLength) return Padding::kMaxLength;
  return Padding::kLongest;
}

SpecData load_spec_data(const spec::RunSpec& spec) {
  SpecData out;
  try {
    out.tokenizer = tokenizer_for(spec);
  } catch (const TokenizerError& e) {
    throw spec::NamedFileError(spec::issue_at(spec, "data.tokenizer", e.what()));
  }
  check_tokenizer_fits(spec, *out.tokenizer);
  if (source_of(spec.data) == Source::kSynthetic) {
    out.train = std::make_unique<SyntheticDataset>(spec.data, *out.tokenizer);
    return out;
  }
  ValidationOptions validation;
  validation.fraction = spec.data.validation_fraction;
  validation.path = spec.data.validation_path;
  TrainValidationData split;
  try {
    split = load_train_validation(data_file_options(spec), validation, *out.tokenizer);
  } catch (const DataError& e) {
    const std::string key = e.spec_key().empty() ? "data.path" : e.spec_key();
    throw spec::NamedFileError(spec::issue_at(spec, key, e.what()));
  }
  out.file_stats = split.train->stats();
  out.file_format = split.train->format();
  out.train = std::move(split.train);
  out.validation = std::move(split.validation);
  return out;
}

void check_named_files(const spec::RunSpec& spec) {
  std::vector<std::pair<const char*, std::string>> named;
  if (!spec.model.checkpoint.empty()) named.emplace_back("model.checkpoint", spec.model.checkpoint);
  if (spec.data.tokenizer != spec::choice::tokenizer::kByte &&
      spec.data.tokenizer != spec::choice::tokenizer::kNone) {
    named.emplace_back("data.tokenizer", spec.data.tokenizer);
  }
  if (source_of(spec.data) == Source::kFile) named.emplace_back("data.path", spec.data.path);
  if (!spec.data.validation_path.empty()) {
    named.emplace_back("data.validation_path", spec.data.validation_path);
  }
  for (const auto& [key, path] : named) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      throw spec::SpecError(
          {spec::issue_at(spec, key, fmt::format("{}: no such file or folder", path))});
    }
  }
}

spec::DerivedCounts counts_from_rows(const spec::RunSpec& spec, int64_t rows, int64_t examples) {
  const spec::TrainSpec& t = spec.train;
  const spec::DerivedCounts counts =
      spec::derive_counts_from_batches(spec, rows / t.micro_batch_size);
  if (counts.steps_per_epoch >= 1) return counts;
  const std::string row = padding_of(spec.data) == Padding::kPack ? "packed row" : "row";
  throw spec::SpecError({spec::issue_at(
      spec, source_of(spec.data) == Source::kFile ? "data.path" : "data.num_examples",
      fmt::format("{} {} {} {}: 0 optimizer steps with micro_batch_size {} x "
                  "grad_accum_steps {} (need at least {} {}s)",
                  examples, examples == 1 ? "example makes" : "examples make", rows,
                  rows == 1 ? row : row + "s", t.micro_batch_size, t.grad_accum_steps,
                  t.micro_batch_size * t.grad_accum_steps, row))});
}

}  // namespace ftbench::data
