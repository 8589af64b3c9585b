// check_fairness: which differences between reports make them a different job, the same job run
// differently, or the platform being compared.
#include "analysis/compare/fairness.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "report/report.h"

namespace ftbench::compare {
namespace {

using Values = std::vector<std::string>;

// A minimal completed H100 report of the reference job, shrunk to 3 steps.
report::Report make_report() {
  report::Report r;
  r.run_name = "h100";
  r.status = "completed";
  r.world_size = 1;
  r.t0_source = "process_start";
  r.spec = nlohmann::ordered_json::parse(R"({
    "model": {"name": "llama-3.1-8b", "dtype": "bf16", "activation_checkpointing": false},
    "lora": {"rank": 16, "alpha": 32, "dropout": 0.05},
    "data": {"source": "alpaca", "examples": 2000, "max_seq_len": 2048},
    "train": {"micro_batch_size": 4, "grad_accum_steps": 4, "epochs": 3, "lr": 0.0003,
              "timing_warmup_steps": 1, "loss_window": 10},
    "backend": {"device": "cuda", "intra_op_threads": 0},
    "output": {"dir": "out/h100", "progress": true}
  })");
  r.spec_fingerprint = "0123456789abcdef0123456789abcdef";
  r.data = report::DataInfo{"alpaca(2000)", 2000, 500000, 250000, "feedbeef"};
  r.derived.effective_batch = 16;
  r.summary.warmup_steps_excluded = 1;
  for (int i = 1; i <= 3; ++i) {
    report::StepRecord s;
    s.step = i;
    s.epoch = 1;
    r.steps.push_back(s);
  }
  report::Environment& env = r.environment;
  env.device.backend = "cuda";
  env.device.name = "NVIDIA H100 80GB HBM3";
  env.device.driver_version = "550.54";
  env.device.runtime_version = "12.4";
  env.software.ftbench_version = "0.1.0";
  env.software.git_commit = "abc1234";
  env.software.libtorch_version = "2.5.1";
  env.software.compiler = "GCC 12.2.0";
  env.software.build_type = "Release";
  env.software.intra_op_threads = 16;
  env.software.blas = "MKL";
  env.host.cpu_model = "Intel Xeon Platinum 8480+";
  return r;
}

std::vector<std::string> whats(const Fairness& f) {
  std::vector<std::string> out;
  for (const Difference& d : f.differences) out.push_back(d.what);
  return out;
}

const Difference* find(const Fairness& f, const std::string& what) {
  for (const Difference& d : f.differences) {
    if (d.what == what) return &d;
  }
  return nullptr;
}

}  // namespace

TEST(FairnessSeverity, Names) {
  EXPECT_STREQ(to_string(Severity::kJob), "job");
  EXPECT_STREQ(to_string(Severity::kExecution), "execution");
  EXPECT_STREQ(to_string(Severity::kPlatform), "platform");
}

TEST(Fairness, FewerThanTwoReportsIsTriviallyFair) {
  const Fairness none = check_fairness({});
  EXPECT_TRUE(none.same_job);
  EXPECT_TRUE(none.differences.empty());
  const Fairness one = check_fairness({make_report()});
  EXPECT_TRUE(one.same_job);
  EXPECT_TRUE(one.same_spec_fingerprint);
  EXPECT_FALSE(one.same_data_fingerprint.has_value());
  EXPECT_TRUE(one.differences.empty());
}

TEST(Fairness, IdenticalReportsAreTheSameJob) {
  const Fairness f = check_fairness({make_report(), make_report()});
  EXPECT_TRUE(f.same_job);
  EXPECT_TRUE(f.same_spec_fingerprint);
  ASSERT_TRUE(f.same_data_fingerprint.has_value());
  EXPECT_TRUE(*f.same_data_fingerprint);
  EXPECT_TRUE(f.differences.empty());
}

TEST(Fairness, MicroBatchSplitAtEqualEffectiveBatchIsExecution) {
  // The MI300X leg of the reference run: micro-batch 2 x accumulation 8 instead of 4 x 4.
  report::Report a = make_report();
  report::Report b = make_report();
  b.spec["train"]["micro_batch_size"] = 2;
  b.spec["train"]["grad_accum_steps"] = 8;
  const Fairness f = check_fairness({a, b});
  EXPECT_TRUE(f.same_job);
  EXPECT_TRUE(f.same_spec_fingerprint);
  ASSERT_EQ(f.differences.size(), 2u);
  EXPECT_EQ(f.differences[0].what, "spec.train.micro_batch_size");
  EXPECT_EQ(f.differences[0].values, (Values{"4", "2"}));
  EXPECT_EQ(f.differences[0].severity, Severity::kExecution);
  EXPECT_NE(f.differences[0].note, "");
  EXPECT_EQ(f.differences[1].what, "spec.train.grad_accum_steps");
  EXPECT_EQ(f.differences[1].values, (Values{"4", "8"}));
  EXPECT_EQ(f.differences[1].severity, Severity::kExecution);
}

TEST(Fairness, DifferentSpecFingerprintIsListedAsExecution) {
  report::Report a = make_report();
  report::Report b = make_report();
  b.spec["train"]["micro_batch_size"] = 2;
  b.spec["train"]["grad_accum_steps"] = 8;
  b.spec_fingerprint = "fedcba9876543210fedcba9876543210";
  const Fairness f = check_fairness({a, b});
  EXPECT_TRUE(f.same_job);
  EXPECT_FALSE(f.same_spec_fingerprint);
  EXPECT_EQ(whats(f), (Values{"spec.train.micro_batch_size", "spec.train.grad_accum_steps",
                              "spec fingerprint"}));
  const Difference* d = find(f, "spec fingerprint");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->severity, Severity::kExecution);
  EXPECT_EQ(d->values, (Values{"0123456789ab", "fedcba987654"}));  // first 12 characters
}

TEST(Fairness, DifferentEffectiveBatchIsJob) {
  report::Report a = make_report();
  report::Report b = make_report();
  b.spec["train"]["grad_accum_steps"] = 8;
  b.derived.effective_batch = 32;
  const Fairness f = check_fairness({a, b});
  EXPECT_FALSE(f.same_job);
  EXPECT_EQ(whats(f), (Values{"effective batch", "spec.train.grad_accum_steps"}));
  EXPECT_EQ(f.differences[0].values, (Values{"16", "32"}));
  EXPECT_EQ(f.differences[0].severity, Severity::kJob);
}

TEST(Fairness, DtypeIsJob) {
  report::Report a = make_report();
  report::Report b = make_report();
  b.spec["model"]["dtype"] = "fp32";
  const Fairness f = check_fairness({a, b});
  EXPECT_FALSE(f.same_job);
  ASSERT_EQ(f.differences.size(), 1u);
  const Difference& d = f.differences[0];
  EXPECT_EQ(d.what, "spec.model.dtype");
  EXPECT_EQ(d.values, (Values{"bf16", "fp32"}));  // strings unquoted
  EXPECT_EQ(d.severity, Severity::kJob);
  EXPECT_EQ(d.note, "different arithmetic precision: speed and numerics both change");
}

// A report from before the checkpointing policies (true / false) and one of today (full / none)
// ran the same policy: no difference. Another policy is an execution difference, with its note.
TEST(Fairness, CheckpointingPoliciesAndTheBoolsBeforeThemCompareAsOne) {
  report::Report a = make_report();
  report::Report b = make_report();
  a.spec["model"]["activation_checkpointing"] = true;
  b.spec["model"]["activation_checkpointing"] = "full";
  EXPECT_TRUE(whats(check_fairness({a, b})).empty());
  b.spec["model"]["activation_checkpointing"] = "selective";
  const Fairness f = check_fairness({a, b});
  ASSERT_EQ(whats(f),
            (Values{"spec.model.activation_checkpointing", "activation checkpointing that ran"}));
  EXPECT_EQ(f.differences[0].values, (Values{"full", "selective"}));
  EXPECT_EQ(f.differences[0].severity, Severity::kExecution);
  EXPECT_TRUE(f.same_job);
  EXPECT_NE(f.differences[0].note.find("selective: the elementwise work"), std::string::npos);
  EXPECT_EQ(f.differences[1].values, (Values{"full", "selective"}));
  EXPECT_EQ(f.differences[1].severity, Severity::kExecution);
}

// Two runs of one spec that says auto may run different policies (each device's memory
// decides): what ran is compared (report `execution`), as are the fused blocks and ftbench's GPU
// kernels where every report recorded them.
TEST(Fairness, WhatRanIsComparedNotOnlyWhatTheSpecSaid) {
  report::Report a = make_report();
  report::Report b = make_report();
  a.spec["model"]["activation_checkpointing"] = "auto";
  b.spec["model"]["activation_checkpointing"] = "auto";
  a.execution = report::Execution{};
  a.execution->activation_checkpointing = "none";
  b.execution = a.execution;
  EXPECT_TRUE(whats(check_fairness({a, b})).empty());
  b.execution->activation_checkpointing = "full";
  b.execution->fused_blocks = false;
  b.execution->gpu_kernels = true;
  const Fairness f = check_fairness({a, b});
  ASSERT_EQ(whats(f), (Values{"activation checkpointing that ran", "fused blocks",
                              "GPU kernels of ftbench's own"}));
  EXPECT_EQ(f.differences[0].values, (Values{"none (auto)", "full (auto)"}));
  EXPECT_EQ(f.differences[1].values, (Values{"on", "off"}));
  EXPECT_EQ(f.differences[2].values, (Values{"off", "on"}));
  for (const Difference& d : f.differences) EXPECT_EQ(d.severity, Severity::kExecution);
  EXPECT_TRUE(f.same_job);
}

TEST(Fairness, OtherSpecKeysAreJobWithJsonText) {
  report::Report a = make_report();
  report::Report b = make_report();
  b.spec["lora"]["rank"] = 8;
  b.spec["lora"]["dropout"] = 0.1;
  b.spec["model"]["activation_checkpointing"] = true;
  b.spec["train"]["timing_warmup_steps"] = 5;
  b.spec["train"]["loss_window"] = 20;
  const Fairness f = check_fairness({a, b});
  EXPECT_FALSE(f.same_job);
  EXPECT_EQ(whats(f),
            (Values{"spec.lora.rank", "spec.lora.dropout", "spec.model.activation_checkpointing",
                    "spec.train.timing_warmup_steps", "spec.train.loss_window",
                    "activation checkpointing that ran"}));
  EXPECT_EQ(f.differences[0].values, (Values{"16", "8"}));
  EXPECT_EQ(f.differences[0].severity, Severity::kJob);
  EXPECT_EQ(f.differences[1].values, (Values{"0.05", "0.1"}));
  EXPECT_EQ(f.differences[2].values, (Values{"none", "full"}));  // the bools read as policies
  EXPECT_EQ(f.differences[2].severity, Severity::kExecution);
  EXPECT_EQ(f.differences[3].values, (Values{"1", "5"}));
  EXPECT_EQ(f.differences[3].severity, Severity::kExecution);
  EXPECT_EQ(f.differences[4].values, (Values{"10", "20"}));
  EXPECT_EQ(f.differences[4].severity, Severity::kExecution);
}

TEST(Fairness, KeyInOneReportOnlyIsAbsentInTheOther) {
  report::Report a = make_report();
  report::Report b = make_report();
  b.spec["train"]["seed"] = 7;
  a.spec["data"].erase("examples");
  const Fairness f = check_fairness({a, b});
  EXPECT_FALSE(f.same_job);
  // Keys in the baseline's order first, then keys only the later reports have. A key the spec
  // does not know is "(absent)"; a known key takes its default (train.seed: 42).
  EXPECT_EQ(whats(f), (Values{"spec.data.examples", "spec.train.seed"}));
  EXPECT_EQ(f.differences[0].values, (Values{"(absent)", "2000"}));
  EXPECT_EQ(f.differences[1].values, (Values{"42", "7"}));
}

// A report written before a spec key existed ran with that key's default: no difference.
TEST(Fairness, AKeyAddedLaterCountsAsItsDefault) {
  report::Report a = make_report();
  report::Report b = make_report();
  b.spec["data"]["format"] = "auto";
  b.spec["data"]["too_long"] = "truncate";
  EXPECT_TRUE(check_fairness({a, b}).differences.empty());
  b.spec["data"]["too_long"] = "drop";
  const Fairness f = check_fairness({a, b});
  EXPECT_EQ(whats(f), (Values{"spec.data.too_long"}));
  EXPECT_EQ(f.differences[0].values, (Values{"truncate", "drop"}));
}

TEST(Fairness, DataFingerprintIsJob) {
  report::Report a = make_report();
  report::Report b = make_report();
  b.data->fingerprint = "deadbeef";
  const Fairness f = check_fairness({a, b});
  EXPECT_FALSE(f.same_job);
  ASSERT_TRUE(f.same_data_fingerprint.has_value());
  EXPECT_FALSE(*f.same_data_fingerprint);
  ASSERT_EQ(f.differences.size(), 1u);
  EXPECT_EQ(f.differences[0].what, "data fingerprint");
  EXPECT_EQ(f.differences[0].values, (Values{"feedbeef", "deadbeef"}));
  EXPECT_EQ(f.differences[0].severity, Severity::kJob);
}

TEST(Fairness, ReportWithoutDataHasNoDataVerdict) {
  report::Report a = make_report();
  report::Report b = make_report();
  b.data.reset();  // a report before schema 1.1
  const Fairness f = check_fairness({a, b});
  EXPECT_FALSE(f.same_data_fingerprint.has_value());
  EXPECT_TRUE(f.same_job);
  EXPECT_TRUE(f.differences.empty());
  EXPECT_EQ(find(f, "data fingerprint"), nullptr);
}

TEST(Fairness, OutputSettingsAreIgnored) {
  report::Report a = make_report();
  report::Report b = make_report();
  b.spec["output"]["dir"] = "out/mi300x";
  b.spec["output"]["progress"] = false;
  b.spec["output"]["name"] = "only-in-b";
  a.run_name = "a";
  b.run_name = "b";
  const Fairness f = check_fairness({a, b});
  EXPECT_TRUE(f.same_job);
  EXPECT_TRUE(f.differences.empty());
}

TEST(Fairness, BackendSpecKeysArePlatform) {
  report::Report a = make_report();
  report::Report b = make_report();
  b.spec["backend"]["device"] = "rocm";
  b.spec["backend"]["intra_op_threads"] = 8;
  const Fairness f = check_fairness({a, b});
  EXPECT_TRUE(f.same_job);
  EXPECT_EQ(whats(f), (Values{"spec.backend.device", "spec.backend.intra_op_threads"}));
  EXPECT_EQ(f.differences[0].values, (Values{"cuda", "rocm"}));
  EXPECT_EQ(f.differences[0].severity, Severity::kPlatform);
  EXPECT_EQ(f.differences[1].values, (Values{"0", "8"}));
  EXPECT_EQ(f.differences[1].severity, Severity::kPlatform);
}

TEST(Fairness, DeviceAndSoftwareArePlatform) {
  report::Report a = make_report();
  report::Report b = make_report();
  b.environment.device.name = "AMD Instinct MI300X";
  b.environment.software.libtorch_version = "2.5.1+rocm6.2";
  const Fairness f = check_fairness({a, b});
  EXPECT_TRUE(f.same_job);
  EXPECT_EQ(whats(f), (Values{"device", "LibTorch"}));
  EXPECT_EQ(f.differences[0].values, (Values{"NVIDIA H100 80GB HBM3", "AMD Instinct MI300X"}));
  EXPECT_EQ(f.differences[0].severity, Severity::kPlatform);
  EXPECT_EQ(f.differences[1].values, (Values{"2.5.1", "2.5.1+rocm6.2"}));
  EXPECT_EQ(f.differences[1].severity, Severity::kPlatform);
}

TEST(Fairness, WholePlatformDiffersInDocumentedOrder) {
  report::Report a = make_report();
  report::Report b = make_report();
  report::Environment& env = b.environment;
  env.device.name = "AMD Instinct MI300X";
  env.device.backend = "rocm";
  env.device.driver_version = "6.8.5";
  env.device.runtime_version = "6.3";
  env.software.libtorch_version = "2.5.1+rocm6.2";
  env.software.container_image = "rocm/pytorch-training:v25.4";
  env.software.git_commit = "def5678";
  env.software.compiler = "Clang 17";
  env.software.intra_op_threads = 24;
  env.software.blas = "OpenBLAS";
  env.host.cpu_model = "AMD EPYC 9454";
  const Fairness f = check_fairness({a, b});
  EXPECT_TRUE(f.same_job);
  EXPECT_EQ(whats(f),
            (Values{"device", "backend", "driver", "runtime", "LibTorch", "container image",
                    "ftbench", "compiler", "intra-op threads", "BLAS", "host CPU"}));
  for (const Difference& d : f.differences) EXPECT_EQ(d.severity, Severity::kPlatform) << d.what;
  EXPECT_EQ(find(f, "ftbench")->values, (Values{"0.1.0 (abc1234)", "0.1.0 (def5678)"}));
  EXPECT_EQ(find(f, "intra-op threads")->values, (Values{"16", "24"}));
  EXPECT_EQ(find(f, "container image")->values, (Values{"", "rocm/pytorch-training:v25.4"}));
}

TEST(Fairness, ExecutionOutsideTheSpec) {
  report::Report a = make_report();
  report::Report b = make_report();
  b.world_size = 2;
  b.t0_source = "--t0";
  b.summary.warmup_steps_excluded = 3;
  b.environment.software.build_type = "Debug";
  const Fairness f = check_fairness({a, b});
  EXPECT_TRUE(f.same_job);
  EXPECT_EQ(whats(f),
            (Values{"world size", "t0 source", "timing warm-up steps excluded", "build type"}));
  for (const Difference& d : f.differences) EXPECT_EQ(d.severity, Severity::kExecution) << d.what;
  EXPECT_EQ(f.differences[0].values, (Values{"1", "2"}));
  EXPECT_EQ(f.differences[1].values, (Values{"process_start", "--t0"}));
  EXPECT_EQ(f.differences[2].values, (Values{"1", "3"}));
  EXPECT_EQ(f.differences[3].values, (Values{"Release", "Debug"}));
}

TEST(Fairness, StepsFinishedAndStatusAreJob) {
  report::Report a = make_report();
  report::Report b = make_report();
  b.steps.pop_back();
  b.status = "failed";
  const Fairness f = check_fairness({a, b});
  EXPECT_FALSE(f.same_job);
  EXPECT_EQ(whats(f), (Values{"run status", "steps finished"}));
  EXPECT_EQ(f.differences[0].values, (Values{"completed", "failed"}));
  EXPECT_EQ(f.differences[0].severity, Severity::kJob);
  EXPECT_EQ(f.differences[1].values, (Values{"3", "2"}));
  EXPECT_EQ(f.differences[1].severity, Severity::kJob);
}

TEST(Fairness, JobBeforeExecutionBeforePlatform) {
  report::Report a = make_report();
  report::Report b = make_report();
  // Added so that discovery order and severity order disagree.
  b.environment.device.name = "AMD Instinct MI300X";  // platform
  b.spec["backend"]["device"] = "rocm";               // platform (spec)
  b.spec["train"]["micro_batch_size"] = 2;            // execution (spec)
  b.world_size = 2;                                   // execution
  b.spec["model"]["dtype"] = "fp16";                  // job (spec)
  b.steps.pop_back();                                 // job
  b.spec["data"]["max_seq_len"] = 4096;               // job (spec)
  const Fairness f = check_fairness({a, b});
  EXPECT_FALSE(f.same_job);
  EXPECT_EQ(whats(f),
            (Values{"steps finished", "spec.model.dtype", "spec.data.max_seq_len",
                    "spec.train.micro_batch_size", "world size", "spec.backend.device", "device"}));
  const std::vector<Severity> expected = {
      Severity::kJob,       Severity::kJob,      Severity::kJob,     Severity::kExecution,
      Severity::kExecution, Severity::kPlatform, Severity::kPlatform};
  ASSERT_EQ(f.differences.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(f.differences[i].severity, expected[i]) << f.differences[i].what;
  }
}

TEST(Fairness, EveryReportIsComparedWithTheFirst) {
  report::Report a = make_report();
  report::Report b = make_report();
  report::Report c = make_report();
  c.spec["train"]["micro_batch_size"] = 1;
  c.spec["train"]["grad_accum_steps"] = 16;
  c.environment.device.name = "NVIDIA H200";
  const Fairness f = check_fairness({a, b, c});
  EXPECT_TRUE(f.same_job);
  EXPECT_EQ(whats(f),
            (Values{"spec.train.micro_batch_size", "spec.train.grad_accum_steps", "device"}));
  EXPECT_EQ(f.differences[0].values, (Values{"4", "4", "1"}));
  EXPECT_EQ(f.differences[1].values, (Values{"4", "4", "16"}));
  EXPECT_EQ(f.differences[2].values,
            (Values{"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "NVIDIA H200"}));
}

TEST(Fairness, AnOutOfMemoryFallbackIsAlwaysFlaggedAsExecution) {
  // The MI300X leg of the reference run as ftbench would now run it: asked for 4 x 4, ran out
  // of memory in step 1 and went on at 2 x 8. The spec (what was asked) and its fingerprint
  // are the H100's; the fallback is what differs.
  report::Report a = make_report();
  a.batching = report::Batching{4, 4, {}};
  report::Report b = make_report();
  b.batching = report::Batching{2, 8, {}};
  b.batching->fallbacks.push_back(
      {1, 4, 4, 2, 8, 41.5, "HIP out of memory. Tried to allocate 3.91 GiB"});
  const Fairness f = check_fairness({a, b});
  EXPECT_TRUE(f.same_job);
  EXPECT_TRUE(f.same_spec_fingerprint);
  EXPECT_TRUE(f.fell_back);
  EXPECT_EQ(whats(f), (Values{"out-of-memory fallback"}));
  EXPECT_EQ(f.differences[0].severity, Severity::kExecution);
  EXPECT_EQ(f.differences[0].values, (Values{"none", "4x4 -> 2x8 at step 1 (41.5 s lost)"}));
  EXPECT_NE(f.differences[0].note.find("same effective batch"), std::string::npos);

  // Both fell back the same way: still listed. A report before 1.2 did not record it.
  report::Report c = b;
  c.batching->fallbacks.push_back({1, 2, 8, 1, 16, 2.0, "HIP out of memory"});
  c.batching->micro_batch_size = 1;
  c.batching->grad_accum_steps = 16;
  report::Report old = make_report();
  const Fairness g = check_fairness({b, b, c, old});
  EXPECT_EQ(whats(g), (Values{"out-of-memory fallback"}));
  EXPECT_EQ(g.differences[0].values,
            (Values{"4x4 -> 2x8 at step 1 (41.5 s lost)", "4x4 -> 2x8 at step 1 (41.5 s lost)",
                    "4x4 -> 2x8 at step 1, 2x8 -> 1x16 at step 1 (43.5 s lost)", "not recorded"}));

  // No report fell back: nothing to flag, whether recorded or not.
  const Fairness none = check_fairness({a, old});
  EXPECT_FALSE(none.fell_back);
  EXPECT_TRUE(none.differences.empty());
}

TEST(Fairness, CheckpointSettingsAreExecutionAndAResumedRunIsFlagged) {
  report::Report a = make_report();
  report::Report b = make_report();
  b.spec["train"]["checkpoint"] = {{"dir", "/mnt/ck/{name}"}, {"every_steps", 50}};
  const Fairness f = check_fairness({a, b});
  EXPECT_TRUE(f.same_job);
  // Both keys differ from the defaults `a` ran with (it predates them), and both are listed.
  EXPECT_EQ(whats(f), (Values{"spec.train.checkpoint.dir", "spec.train.checkpoint.every_steps"}));
  ASSERT_EQ(f.differences.size(), 2u);
  EXPECT_EQ(f.differences[0].values, (Values{"checkpoints/{name}", "/mnt/ck/{name}"}));
  EXPECT_EQ(f.differences[1].values, (Values{"0", "50"}));
  for (const auto& d : f.differences) EXPECT_EQ(d.severity, Severity::kExecution) << d.what;

  report::Report c = make_report();
  c.segments = {{1, "interrupted", "", "", 1, 5, 60.0, 20.0, "", 0, std::nullopt},
                {2, "completed", "", "", 6, 10, 70.0, 25.0, "ck/step-00000005", 0, std::nullopt}};
  const Fairness g = check_fairness({a, c});
  EXPECT_TRUE(g.same_job);
  EXPECT_EQ(whats(g), (Values{"segments"}));
  EXPECT_EQ(g.differences[0].severity, Severity::kExecution);
  EXPECT_EQ(g.differences[0].values, (Values{"1 (never interrupted)", "2 (resumed 1 time)"}));
}

TEST(Fairness, OutOfMemorySettingsAreExecution) {
  report::Report a = make_report();
  report::Report b = make_report();
  b.spec["train"]["oom_fallback"] = false;
  b.spec["train"]["oom_max_fallbacks"] = 2;
  const Fairness f = check_fairness({a, b});
  EXPECT_TRUE(f.same_job);
  // `a` was written before the keys existed: it ran with their defaults (on, 4).
  EXPECT_EQ(whats(f), (Values{"spec.train.oom_fallback", "spec.train.oom_max_fallbacks"}));
  EXPECT_EQ(f.differences[0].values, (Values{"true", "false"}));
  EXPECT_EQ(f.differences[1].values, (Values{"4", "2"}));
  for (const Difference& d : f.differences) EXPECT_EQ(d.severity, Severity::kExecution) << d.what;
}

// Where the data and tokenizer files are differs between machines (and between a run and its
// re-creation from the report, whose paths are absolute); what they hold is the data
// fingerprint. Documented as execution; they were refused as job.
TEST(Fairness, DataAndTokenizerPathsAreExecution) {
  report::Report a = make_report();
  report::Report b = make_report();
  a.spec["data"]["path"] = "data/train.jsonl";
  b.spec["data"]["path"] = "/mnt/runs/data/train.jsonl";
  a.spec["data"]["tokenizer"] = "tok";
  b.spec["data"]["tokenizer"] = "/mnt/runs/tok";
  a.spec["data"]["validation_path"] = "data/val.jsonl";
  b.spec["data"]["validation_path"] = "/mnt/runs/data/val.jsonl";
  const Fairness f = check_fairness({a, b});
  EXPECT_TRUE(f.same_job);
  ASSERT_EQ(f.differences.size(), 3u);
  for (const Difference& d : f.differences) EXPECT_EQ(d.severity, Severity::kExecution) << d.what;
}

}  // namespace ftbench::compare
