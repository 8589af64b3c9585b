// The summary `ftbench run` prints at its end, with exact lines.
#include "report/summary_text.h"

#include <string>

#include <gtest/gtest.h>

#include "report/report.h"

namespace ftbench::report {
namespace {

// Llama 3.1 8B with r16 adapters on q, v and o (docs/methodology.md): one meaning of "total",
// the JSON's (base + trainable), with base and trainable named.
TEST(SummaryText, ParametersSayTotalBaseAndTrainable) {
  Report r;
  r.run_name = "llama";
  r.status = "completed";
  r.parameters = {8030261248, 11010048, 8041271296};
  const std::string out = render_summary(r, "reports/llama.json");
  EXPECT_NE(out.find("  parameters                8,041,271,296 total: 8,030,261,248 base + "
                     "11,010,048 trainable\n"),
            std::string::npos)
      << out;
}

TEST(SummaryText, AJobOfSeveralRanksSaysHowTheyDid) {
  Report r;
  r.run_name = "dp";
  r.status = "completed";
  r.world_size = 2;
  Distributed d;
  d.launch = "torchrun";
  d.backend = "gloo";
  d.step_skew_seconds = 0.0125;
  d.straggler_rank = 1;
  d.collective_share = 0.25;
  d.tokens_per_second_per_device = 5000.0;
  r.distributed = d;
  const std::string out = render_summary(r, "r.json");
  EXPECT_NE(out.find("  ranks                     2 (torchrun, gloo), 5000 tokens/s per device\n"
                     "  between ranks             step skew 0.0125 s (median), 25.0% of the "
                     "step in collectives, slowest rank 1\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("base split"), std::string::npos);
  r.distributed->shard_base = "node";
  RankRecord rank0;
  rank0.shard_group_size = 2;
  rank0.base_bytes = 12'345'678;
  rank0.gathers = 48;
  rank0.gather_wait_seconds = 0.0625;
  r.distributed->ranks = {rank0, rank0};
  EXPECT_NE(render_summary(r, "r.json")
                .find("  base split                over 2 ranks (node): rank 0 holds 11.77 MiB of "
                      "it, 48 gathers, 0.062 s waited for them\n"),
            std::string::npos)
      << render_summary(r, "r.json");
  // Nodes of 2 and 1 ranks under `node`: the lone rank keeps the base whole.
  r.distributed->ranks[1].shard_group_size = 1;
  EXPECT_NE(render_summary(r, "r.json")
                .find("  base split                over 1 to 2 ranks (node), some ranks whole: "
                      "rank 0 holds 11.77 MiB of it"),
            std::string::npos)
      << render_summary(r, "r.json");
  r.distributed.reset();
  EXPECT_EQ(render_summary(r, "r.json").find("ranks"), std::string::npos);
}

// Sizes of what a run wrote, small or large, in the units format_bytes chooses: a LoRA adapter
// of 24 KiB was "0.0 MB".
TEST(SummaryText, SizesOfWhatTheRunWroteAreReadableAtAnyScale) {
  Report r;
  r.run_name = "tiny";
  r.status = "completed";
  r.exports.push_back({"peft_adapter", "out/adapter", 14, 24'576, 0.0125});
  r.exports.push_back({"merged", "out/merged", 30, 16'060'522'496, 41.5});
  CheckpointSave c;
  c.step = 6;
  c.path = "ckpt/step-00000006";
  c.bytes = 73'728;
  c.seconds = 0.004;
  r.checkpoints.push_back(c);
  WeightsInfo w;
  w.source = "checkpoint";
  w.path = "models/tiny";
  w.bytes = 1'536;
  w.seconds = 0.5;
  w.bytes_per_second = 3072.0;
  r.weights = w;
  const std::string out = render_summary(r, "r.json");
  EXPECT_NE(out.find("  adapter (PEFT)            out/adapter (24.00 KiB, 0.01 s)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  merged weights            out/merged (14.96 GiB, 41.50 s)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  checkpoints               1 saved; last after step 6: ckpt/step-00000006 "
                     "(72.00 KiB, 0.004 s)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("  weights                   models/tiny: 1.50 KiB in 0.50 s (3.00 KiB/s)\n"),
            std::string::npos)
      << out;
}

// The run name and device come from the spec and the driver: printed escaped, like every text
// printer's file-derived strings.
// A run with no step after its timing warm-up times every step, cold ones included (the summary
// falls back to them rather than to nothing): said where the steps are counted.
TEST(SummaryText, ARunShorterThanItsWarmUpSaysItsTimesIncludeTheColdSteps) {
  Report r;
  r.run_name = "short";
  r.status = "completed";
  r.spec = {{"train", {{"timing_warmup_steps", 5}}}};
  r.steps.resize(3);
  r.summary.warmup_steps_excluded = 0;
  r.summary.measured_steps = 3;
  std::string out = render_summary(r, "r.json");
  EXPECT_NE(out.find("  steps                     3 (3 timed, 0 warm-up excluded: no step is after "
                     "the 5 warm-up steps, so the timed steps include the cold ones)\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(warmup_caveat(r),
            "no step is after the 5 warm-up steps, so the timed steps include the cold ones");
  r.steps.resize(8);
  r.summary.warmup_steps_excluded = 5;
  r.summary.measured_steps = 3;
  out = render_summary(r, "r.json");
  EXPECT_NE(out.find("  steps                     8 (3 timed, 5 warm-up excluded)\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(warmup_caveat(r), "");
}

TEST(SummaryText, ControlCharactersAreEscaped) {
  Report r;
  r.run_name = "run\x1B[2J";
  r.status = "completed";
  r.environment.device.name =
      "GPU\xC2\x9B"
      "31m";
  const std::string out = render_summary(r, "out/\x1B]0;x\x07.json");
  EXPECT_NE(out.find("ftbench run\\x1B[2J - completed\n"), std::string::npos) << out;
  EXPECT_NE(out.find("GPU\\u009B31m ("), std::string::npos) << out;
  EXPECT_NE(out.find("out/\\x1B]0;x\\x07.json"), std::string::npos) << out;
  EXPECT_EQ(out.find('\x1B'), std::string::npos) << out;
}

// A resumed run measures the energy of its last process: every printer says so, so that the
// figure is not read as the run's.
TEST(SummaryText, EnergyOfAResumedRunSaysWhatItCovers) {
  Report r;
  r.status = "completed";
  r.steps.resize(8);
  r.segments.resize(2);
  Energy e;
  e.segment = 2;
  e.steps = 4;
  e.joules = 100.0;
  r.energy = e;
  EXPECT_EQ(energy_scope(r), "process 2 of 2 only: 4 of 8 steps");
  EXPECT_NE(render_summary(r, "r.json").find("[process 2 of 2 only: 4 of 8 steps]"),
            std::string::npos)
      << render_summary(r, "r.json");
  r.energy->steps = 8;  // a whole run, or a resume whose earlier processes trained nothing
  EXPECT_EQ(energy_scope(r), "");
  r.energy->steps = 4;
  r.energy->joules.reset();  // nothing measured: nothing to qualify
  EXPECT_EQ(energy_scope(r), "");
  r.energy.reset();
  EXPECT_EQ(energy_scope(r), "");
}

// The validation line of a resumed run: every pass of the run and the time of all of them (the
// evaluation phases are this process's alone; 4 passes "0.19 s evaluating" was two of them).
TEST(SummaryText, TheValidationPassesAndTheirTimeAreTheWholeRuns) {
  Report r;
  r.run_name = "tiny";
  r.status = "completed";
  r.evaluations = {{2, 2.5, 400, 1, 0.25}, {4, 2.25, 400, 1, 0.25}, {6, 2.0, 400, 1, 0.5}};
  r.phases = {{"training", 0.0, 3.0}, {"evaluation", 3.0, 0.6}, {"training", 3.6, 1.0}};
  const std::string out = render_summary(r, "r.json");
  EXPECT_NE(out.find("  validation loss           2.0000 after step 6 (400 tokens; 3 passes, "
                     "1.00 s evaluating)\n"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace ftbench::report

namespace ftbench::report {
namespace {

// A run started again at step 1 after a process that ended before any checkpoint (a stop during
// set-up, a kill before the first save) was said to be "resumed 1 time" (a hostile review of
// issue 39): resumes are segments that started from a checkpoint, the others started again.
TEST(SummaryText, SegmentsSayWhichResumedAndWhichStartedAgain) {
  Report r;
  r.status = "completed";
  r.segments.resize(3);
  for (Segment& g : r.segments) g.run_seconds = 1.5;
  r.segments[2].resumed_from = "ck/step-00000004";
  EXPECT_NE(render_summary(r, "r.json")
                .find("3 (started again 1 time, resumed 1 time), 4.50 s rented in all"),
            std::string::npos)
      << render_summary(r, "r.json");
  r.segments[1].resumed_from = "ck/step-00000002";
  EXPECT_NE(render_summary(r, "r.json").find("3 (resumed 2 times), 4.50 s rented in all"),
            std::string::npos)
      << render_summary(r, "r.json");
}

}  // namespace
}  // namespace ftbench::report
