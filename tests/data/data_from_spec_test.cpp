#include "data/data_from_spec.h"

#include <string>

#include <gtest/gtest.h>

#include "spec/spec_error.h"

namespace ftbench::data {
namespace {

spec::RunSpec spec_with(const std::string& source, const std::string& padding) {
  spec::RunSpec s;
  s.source_path = "t.yaml";
  s.data.source = source;
  s.data.padding = padding;
  s.train.micro_batch_size = 4;
  s.train.grad_accum_steps = 2;
  s.train.epochs = 3;
  return s;
}

std::string message_of(const spec::RunSpec& s, int64_t rows, int64_t examples) {
  try {
    counts_from_rows(s, rows, examples);
  } catch (const spec::SpecError& e) {
    return e.what();
  }
  return "no error";
}

TEST(DataFromSpec, ParsesTheChoicesOfTheDataSection) {
  EXPECT_EQ(source_of(spec_with("file", "pack").data), Source::kFile);
  EXPECT_EQ(source_of(spec_with("synthetic", "pack").data), Source::kSynthetic);
  EXPECT_EQ(padding_of(spec_with("file", "pack").data), Padding::kPack);
  EXPECT_EQ(padding_of(spec_with("file", "max_length").data), Padding::kMaxLength);
  EXPECT_EQ(padding_of(spec_with("file", "longest").data), Padding::kLongest);
}

TEST(DataFromSpec, CountsStepsFromRowsAsTheBatcherSplitsThem) {
  // 37 rows: 9 micro-batches of 4 (the last partial one dropped), 4 steps of 2 per epoch.
  const spec::DerivedCounts c = counts_from_rows(spec_with("file", "longest"), 37, 37);
  EXPECT_EQ(c.micro_batches_per_epoch, 9);
  EXPECT_EQ(c.steps_per_epoch, 4);
  EXPECT_EQ(c.total_steps, 12);
  EXPECT_EQ(c.effective_batch, 8);
}

TEST(DataFromSpec, NoOptimizerStepNamesTheKeyAndWhatIsNeeded) {
  EXPECT_EQ(message_of(spec_with("file", "longest"), 7, 7),
            "t.yaml: data.path: 7 examples make 7 rows: 0 optimizer steps with micro_batch_size 4 "
            "x grad_accum_steps 2 (need at least 8 rows)");
  EXPECT_EQ(message_of(spec_with("synthetic", "pack"), 3, 40),
            "t.yaml: data.num_examples: 40 examples make 3 packed rows: 0 optimizer steps with "
            "micro_batch_size 4 x grad_accum_steps 2 (need at least 8 packed rows)");
  // One of each is said as one.
  EXPECT_EQ(message_of(spec_with("file", "longest"), 1, 1),
            "t.yaml: data.path: 1 example makes 1 row: 0 optimizer steps with micro_batch_size 4 "
            "x grad_accum_steps 2 (need at least 8 rows)");
  EXPECT_EQ(message_of(spec_with("synthetic", "pack"), 1, 3),
            "t.yaml: data.num_examples: 3 examples make 1 packed row: 0 optimizer steps with "
            "micro_batch_size 4 x grad_accum_steps 2 (need at least 8 packed rows)");
  EXPECT_EQ(message_of(spec_with("file", "longest"), 8, 8), "no error");
  // Where the key was given: its line, or --set.
  spec::RunSpec placed = spec_with("file", "longest");
  placed.key_origins["data.path"] = {"t.yaml", 7};
  EXPECT_EQ(message_of(placed, 1, 1).rfind("t.yaml:7: data.path: 1 example makes 1 row", 0), 0u)
      << message_of(placed, 1, 1);
  placed.key_origins["data.path"] = {"--set", 0};
  EXPECT_EQ(message_of(placed, 1, 1).rfind("--set: data.path: 1 example makes 1 row", 0), 0u)
      << message_of(placed, 1, 1);
}

}  // namespace
}  // namespace ftbench::data
