// The memory plan (economics/plan/memory.h) held against real runs: each run's report carries the
// plan's predicted peak (memory.predicted_peak_bytes) beside the peak the CPU tensor counter
// measured (memory.peak_allocated_bytes). Over a sweep of micro-batch 1-8, sequence 128-1024,
// activation checkpointing none, full and selective, three target sets, fp32 and bf16, dropout on
// and off and packing, the prediction is within +-10 % of the measurement. The one known exception,
// stated in docs/methodology.md: packed rows on LibTorch < 2.2's blocked CPU attention, where the
// keys a block skips depend on where the examples start; the plan takes none skipped, which
// over-predicts (by up to 38 % in the sweep of docs/benchmarks.md): there the bound is -10 % to +50
// %.
#include <cmath>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ftbench_process.h"

namespace ftbench::e2e {
namespace {

struct Case {
  int micro_batch;
  int seq;
  const char* checkpointing;  // none, full or selective
  const char* targets;
  bool packed;
  const char* dtype;
  double dropout;
};

class PlanMemory : public ::testing::TestWithParam<Case> {};

std::string name_of(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  std::string targets = c.targets;
  std::string clean;
  for (char ch : targets) {
    if (std::isalnum(static_cast<unsigned char>(ch))) clean += ch;
  }
  return "mb" + std::to_string(c.micro_batch) + "_s" + std::to_string(c.seq) +
         (std::string(c.checkpointing) == "full"        ? "_ckpt"
          : std::string(c.checkpointing) == "selective" ? "_selective"
                                                        : "") +
         "_" + clean + (c.packed ? "_packed" : "") + "_" + c.dtype +
         (c.dropout > 0 ? "_dropout" : "");
}

TEST_P(PlanMemory, PredictedPeakIsWithinTenPercentOfTheMeasuredOne) {
  const Case& c = GetParam();
  const ScratchDir scratch("plan-memory");
  const std::string report = (scratch.path() / "r.json").string();
  std::string lengths =
      c.packed
          ? " --set data.length_distribution=uniform --set data.min_tokens=16 --set "
            "data.max_tokens=" +
                std::to_string(c.seq / 2)
          : " --set data.length_distribution=fixed --set data.min_tokens=" + std::to_string(c.seq) +
                " --set data.max_tokens=" + std::to_string(c.seq);
  const std::string args =
      "run configs/ci-tiny.yaml --set output.progress=off --set output.report=" +
      shell_quote(report) + " --set train.micro_batch_size=" + std::to_string(c.micro_batch) +
      " --set train.grad_accum_steps=2 --set train.max_steps=2 --set data.num_examples=" +
      std::to_string(c.micro_batch * 8) + " --set data.seq_len=" + std::to_string(c.seq) +
      " --set model.max_seq_len=1024 --set model.activation_checkpointing=" + c.checkpointing +
      " --set " + shell_quote(std::string("lora.targets=") + c.targets) +
      " --set data.padding=" + (c.packed ? "pack" : "max_length") +
      " --set model.dtype=" + c.dtype + " --set lora.dropout=" + std::to_string(c.dropout) +
      " --set backend.threads=1" + lengths;
  const Outcome o = run_ftbench(args, scratch.path(), "OMP_NUM_THREADS=1", 300.0);
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const nlohmann::json j = nlohmann::json::parse(slurp(report));
  const nlohmann::json& m = j["memory"];
  ASSERT_TRUE(m["peak_allocated_bytes"].is_number_integer()) << "the CPU counter is not installed";
  ASSERT_TRUE(m["predicted_peak_bytes"].is_number_integer()) << m["prediction_basis"];
  const double measured = m["peak_allocated_bytes"].get<double>();
  const double predicted = m["predicted_peak_bytes"].get<double>();
  const std::string basis = m["prediction_basis"].get<std::string>();
  const double error = predicted / measured - 1.0;
  std::printf("plan memory: %s measured %.0f predicted %.0f error %+.1f %% (%s)\n",
              name_of({c, 0}).c_str(), measured, predicted, 100.0 * error, basis.c_str());
  const bool blocked = basis.find("blocked attention") != std::string::npos;
  if (c.packed && blocked) {
    // Every key taken as seen: at most 50 % over, and never more than 10 % under.
    EXPECT_GE(error, -0.10) << basis;
    EXPECT_LE(error, 0.50) << basis;
  } else {
    EXPECT_LE(std::fabs(error), 0.10)
        << "measured " << measured << ", predicted " << predicted << " (" << basis << ")";
  }
}

constexpr const char* kNone = "none";
constexpr const char* kFull = "full";
constexpr const char* kSelective = "selective";
constexpr const char* kQv = "[q,v]";
constexpr const char* kAll = "[q,k,v,o,gate,up,down]";
constexpr const char* kWithHead = "[q,k,v,o,gate,up,down,output]";

INSTANTIATE_TEST_SUITE_P(Sweep, PlanMemory,
                         ::testing::Values(Case{1, 128, kNone, kQv, false, "fp32", 0.0},
                                           Case{4, 128, kNone, kQv, false, "fp32", 0.05},
                                           Case{8, 128, kNone, kAll, false, "bf16", 0.05},
                                           Case{2, 256, kNone, kAll, false, "fp32", 0.05},
                                           Case{4, 256, kNone, kQv, false, "bf16", 0.0},
                                           Case{1, 512, kNone, kWithHead, false, "bf16", 0.05},
                                           Case{8, 512, kNone, kAll, false, "bf16", 0.05},
                                           Case{2, 1024, kNone, kQv, false, "fp32", 0.0},
                                           Case{2, 1024, kNone, kAll, false, "bf16", 0.0},
                                           Case{2, 128, kFull, kQv, false, "fp32", 0.0},
                                           Case{4, 128, kFull, kAll, false, "bf16", 0.0},
                                           Case{8, 256, kFull, kQv, false, "bf16", 0.0},
                                           Case{2, 512, kFull, kAll, false, "fp32", 0.0},
                                           Case{2, 1024, kFull, kQv, false, "fp32", 0.0},
                                           Case{2, 128, kNone, kQv, true, "fp32", 0.05},
                                           Case{4, 256, kNone, kWithHead, true, "fp32", 0.05},
                                           Case{2, 256, kFull, kQv, true, "fp32", 0.05},
                                           Case{4, 512, kNone, kAll, true, "bf16", 0.05},
                                           Case{2, 256, kSelective, kAll, false, "fp32", 0.05},
                                           Case{4, 512, kSelective, kAll, false, "bf16", 0.05},
                                           Case{2, 1024, kSelective, kQv, false, "fp32", 0.0},
                                           Case{2, 256, kSelective, kQv, true, "fp32", 0.05}),
                         name_of);

}  // namespace
}  // namespace ftbench::e2e
