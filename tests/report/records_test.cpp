#include "report/records.h"

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ftbench::report {
namespace {

TEST(Records, EveryFieldTheTrainerMeasuredReachesTheReportsRecords) {
  const train::StepMeasurement m{7, 2, 1.5, 0.25, 1000, 1024, 900, 1.75, 3e-4, 0.5, 6e12};
  const report::StepRecord r = step_record(m, 3);
  EXPECT_EQ(r.step, 7);
  EXPECT_EQ(r.epoch, 2);
  EXPECT_EQ(r.wall_seconds, 1.5);
  EXPECT_EQ(r.data_wait_seconds, 0.25);
  EXPECT_EQ(r.real_tokens, 1000);
  EXPECT_EQ(r.padded_tokens, 1024);
  EXPECT_EQ(r.loss_tokens, 900);
  EXPECT_EQ(r.loss, 1.75);
  EXPECT_EQ(r.lr, 3e-4);
  EXPECT_EQ(r.grad_norm, 0.5);
  EXPECT_EQ(r.model_flops, 6e12);
  EXPECT_EQ(r.segment, 3);

  const train::MicroBatchFallback f{4, 8, 1, 4, 2, 0.75, "CUDA out of memory"};
  const report::Fallback rf = fallback_record(f);
  EXPECT_EQ(rf.step, 4);
  EXPECT_EQ(rf.from_micro_batch_size, 8);
  EXPECT_EQ(rf.from_grad_accum_steps, 1);
  EXPECT_EQ(rf.to_micro_batch_size, 4);
  EXPECT_EQ(rf.to_grad_accum_steps, 2);
  EXPECT_EQ(rf.seconds_lost, 0.75);
  EXPECT_EQ(rf.error, "CUDA out of memory");
  // Back, for a resumed run's trainer: the same fallback.
  const train::MicroBatchFallback back = fallback_from_report(rf);
  EXPECT_EQ(back.step, 4);
  EXPECT_EQ(back.from_micro_batch_size, 8);
  EXPECT_EQ(back.from_grad_accum_steps, 1);
  EXPECT_EQ(back.to_micro_batch_size, 4);
  EXPECT_EQ(back.to_grad_accum_steps, 2);
  EXPECT_EQ(back.seconds_lost, 0.75);
  EXPECT_EQ(back.error, "CUDA out of memory");
}

TEST(Records, EveryFactOfTheEnvironmentReachesTheReport) {
  device::EnvironmentFacts e;
  e.host = {
      "node-7",        "Debian GNU/Linux 12 (bookworm)", "6.1.0-28-amd64", "AMD EPYC 9654", 192,
      int64_t{1} << 40};
  device::DeviceFacts& d = e.device;
  d.backend = "cuda";
  d.name = "NVIDIA H100 80GB HBM3";
  d.arch = "sm_90";
  d.count = 8;
  d.index = 3;
  d.memory_bytes = 85'032'386'560;
  d.multiprocessor_count = 132;
  d.driver_version = "13.0";
  d.runtime_version = "12.8";
  d.l2_cache_bytes = 52'428'800;
  d.clock_khz = 1'980'000;
  d.memory_clock_khz = 2'619'000;
  d.memory_bus_width_bits = 5120;
  d.pci_bus_id = "0000:19:00.0";
  d.kernel_driver_version = "580.65.06";
  d.query_error = "";
  device::SoftwareFacts& s = e.software;
  s.ftbench_version = "0.9.0";
  s.git_commit = "63d7ea91";
  s.libtorch_version = "2.11.0";
  s.compiler = "GCC 12.2.0";
  s.build_type = "release";
  s.intra_op_threads = 16;
  s.inter_op_threads = 1;
  s.blas = "mkl";
  s.omp_wait_policy = "PASSIVE";
  s.host_allocator = "glibc: M_ARENA_MAX=8";
  s.libtorch_build = "cuda";
  s.container_image = "pytorch/pytorch:2.8.0-cuda12.8-cudnn9-devel";
  e.variables = {{"CUDA_VISIBLE_DEVICES", "3"}, {"OMP_NUM_THREADS", ""}};

  const report::Environment r = environment_record(e);
  EXPECT_EQ(r.host.hostname, "node-7");
  EXPECT_EQ(r.host.os, "Debian GNU/Linux 12 (bookworm)");
  EXPECT_EQ(r.host.kernel, "6.1.0-28-amd64");
  EXPECT_EQ(r.host.cpu_model, "AMD EPYC 9654");
  EXPECT_EQ(r.host.cpu_logical_cores, 192);
  EXPECT_EQ(r.host.memory_bytes, int64_t{1} << 40);
  EXPECT_EQ(r.device.backend, "cuda");
  EXPECT_EQ(r.device.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.device.arch, "sm_90");
  EXPECT_EQ(r.device.count, 8);
  EXPECT_EQ(r.device.index, 3);
  EXPECT_EQ(r.device.memory_bytes, 85'032'386'560);
  EXPECT_EQ(r.device.multiprocessor_count, 132);
  EXPECT_EQ(r.device.driver_version, "13.0");
  EXPECT_EQ(r.device.runtime_version, "12.8");
  EXPECT_EQ(r.device.l2_cache_bytes, 52'428'800);
  EXPECT_EQ(r.device.clock_khz, 1'980'000);
  EXPECT_EQ(r.device.memory_clock_khz, 2'619'000);
  EXPECT_EQ(r.device.memory_bus_width_bits, 5120);
  EXPECT_EQ(r.device.pci_bus_id, "0000:19:00.0");
  EXPECT_EQ(r.device.kernel_driver_version, "580.65.06");
  EXPECT_EQ(r.device.query_error, "");
  EXPECT_EQ(r.software.ftbench_version, "0.9.0");
  EXPECT_EQ(r.software.git_commit, "63d7ea91");
  EXPECT_EQ(r.software.libtorch_version, "2.11.0");
  EXPECT_EQ(r.software.compiler, "GCC 12.2.0");
  EXPECT_EQ(r.software.build_type, "release");
  EXPECT_EQ(r.software.intra_op_threads, 16);
  EXPECT_EQ(r.software.inter_op_threads, 1);
  EXPECT_EQ(r.software.blas, "mkl");
  EXPECT_EQ(r.software.omp_wait_policy, "PASSIVE");
  EXPECT_EQ(r.software.host_allocator, "glibc: M_ARENA_MAX=8");
  EXPECT_EQ(r.software.libtorch_build, "cuda");
  EXPECT_EQ(r.software.container_image, "pytorch/pytorch:2.8.0-cuda12.8-cudnn9-devel");
  ASSERT_TRUE(r.variables.has_value());
  ASSERT_EQ(r.variables->size(), 2u);
  EXPECT_EQ((*r.variables)[0].name, "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ((*r.variables)[0].value, "3");
  EXPECT_EQ((*r.variables)[1].name, "OMP_NUM_THREADS");
  EXPECT_EQ((*r.variables)[1].value, "");

  // No variable set is recorded as none, not as "not recorded" (the reports before 1.2).
  e.variables.clear();
  const std::optional<std::vector<report::EnvironmentVariable>> none =
      environment_record(e).variables;
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());
}

TEST(Records, MemoryReadingsBecomeThePhasesAndTheRunsMemory) {
  device::MemoryReading m;
  m.peak_allocated_bytes = 1000;
  m.peak_reserved_bytes = 2000;
  m.peak_active_bytes = 1500;
  m.device_used_peak_bytes = 3000;
  m.peak_rss_bytes = 4000;
  m.rss_at_end_bytes = 3500;
  const report::PhaseMemory p = phase_memory_record(m);
  EXPECT_EQ(p.peak_allocated_bytes, 1000);
  EXPECT_EQ(p.peak_reserved_bytes, 2000);
  EXPECT_EQ(p.peak_active_bytes, 1500);
  EXPECT_EQ(p.device_used_peak_bytes, 3000);
  EXPECT_EQ(p.peak_rss_bytes, 4000);
  EXPECT_EQ(p.rss_at_end_bytes, 3500);
  // A CPU reading: no device figure.
  const report::PhaseMemory cpu = phase_memory_record(device::MemoryReading{});
  EXPECT_FALSE(cpu.peak_reserved_bytes.has_value());
  EXPECT_FALSE(cpu.device_used_peak_bytes.has_value());

  // The run: each peak the largest of the phases', the host's whole-run peak as the meter read
  // it, and the device's counters.
  device::MemoryReading later = m;
  later.peak_allocated_bytes = 5000;
  later.peak_reserved_bytes = 1000;
  const std::vector<TimedPhase> phases = {{"model_load", 1.0, 2.0, m},
                                          {"train", 3.0, 4.0, later},
                                          {"spec_load", 0.0, 1.0, std::nullopt}};
  const report::Phase recorded = phase_record(phases[1]);
  EXPECT_EQ(recorded.name, "train");
  EXPECT_EQ(recorded.start_seconds, 3.0);
  EXPECT_EQ(recorded.seconds, 4.0);
  ASSERT_TRUE(recorded.memory.has_value());
  EXPECT_EQ(recorded.memory->peak_allocated_bytes, 5000);
  EXPECT_EQ(recorded.memory->rss_at_end_bytes, 3500);
  EXPECT_FALSE(phase_record(phases[2]).memory.has_value());
  const report::Memory run =
      run_memory_record(phases, 9000, device::DeviceMemoryCounters{80'000, 2, 1});
  EXPECT_EQ(run.peak_allocated_bytes, 5000);
  EXPECT_EQ(run.peak_reserved_bytes, 2000);
  EXPECT_EQ(run.peak_active_bytes, 1500);
  EXPECT_EQ(run.device_used_peak_bytes, 3000);
  EXPECT_EQ(run.peak_rss_bytes, 9000);
  EXPECT_EQ(run.device_total_bytes, 80'000);
  EXPECT_EQ(run.allocation_retries, 2);
  EXPECT_EQ(run.oom_count, 1);
  // Without a backend (a run that failed before it): no device counters.
  const report::Memory none = run_memory_record(phases, std::nullopt, {});
  EXPECT_FALSE(none.device_total_bytes.has_value());
  EXPECT_FALSE(none.oom_count.has_value());
  EXPECT_FALSE(none.peak_rss_bytes.has_value());
}

TEST(Records, EnergyIsWhatTheMeterReadOrWhyItReadNothing) {
  std::vector<report::StepRecord> steps(3);
  for (report::StepRecord& s : steps) s.real_tokens = 1000;

  device::EnergyReadings none;
  none.reason = "backend cpu: ftbench reads the board power of GPUs only";
  none.interval_seconds = 0.1;
  const report::Energy unmeasured = energy_record(none, 2, steps);
  EXPECT_EQ(unmeasured.reason, "backend cpu: ftbench reads the board power of GPUs only");
  EXPECT_EQ(unmeasured.segment, 2);
  EXPECT_EQ(unmeasured.interval_seconds, 0.1);
  EXPECT_EQ(unmeasured.steps, 3);
  EXPECT_EQ(unmeasured.tokens, 3000);
  EXPECT_FALSE(unmeasured.joules.has_value());

  // One device by its counter: 1000 mJ, then 3000 mJ 0.2 s later: 2 J, 10 W.
  device::EnergyReadings read;
  read.interval_seconds = 0.1;
  device::DeviceReadings d;
  d.index = 0;
  d.library = "libnvidia-ml.so.1";
  d.energy_source = "nvmlDeviceGetTotalEnergyConsumption";
  d.add({0, 1000, std::nullopt});
  d.add({200'000'000, 3000, std::nullopt});
  read.devices = {d};
  const report::Energy e = energy_record(read, 1, steps);
  EXPECT_EQ(e.reason, "");
  EXPECT_EQ(e.method, "energy_counter");
  ASSERT_TRUE(e.joules.has_value());
  EXPECT_DOUBLE_EQ(*e.joules, 2.0);
  ASSERT_TRUE(e.joules_per_step.has_value());
  EXPECT_DOUBLE_EQ(*e.joules_per_step, 2.0 / 3.0);
  ASSERT_TRUE(e.mean_watts.has_value());
  EXPECT_DOUBLE_EQ(*e.mean_watts, 10.0);
  EXPECT_EQ(e.segment, 1);
  ASSERT_EQ(e.devices.size(), 1u);
  EXPECT_EQ(e.devices[0].library, "libnvidia-ml.so.1");
}

TEST(Records, TheRunsPassesSavesAndExportsReachTheReport) {
  const report::Evaluation e = evaluation_record({12, 1.25, 4096, 8, 0.5});
  EXPECT_EQ(e.after_step, 12);
  EXPECT_EQ(e.loss, 1.25);
  EXPECT_EQ(e.loss_tokens, 4096);
  EXPECT_EQ(e.batches, 8);
  EXPECT_EQ(e.seconds, 0.5);

  const report::CheckpointSave c =
      checkpoint_record({20, 2, "every_steps", "ck/step-00000020", 73'728, 0.25});
  EXPECT_EQ(c.step, 20);
  EXPECT_EQ(c.segment, 2);
  EXPECT_EQ(c.reason, "every_steps");
  EXPECT_EQ(c.path, "ck/step-00000020");
  EXPECT_EQ(c.bytes, 73'728);
  EXPECT_EQ(c.seconds, 0.25);

  const report::ExportRecord x = export_record({"merged", "out/merged", 30, 16'060'522'496, 41.5});
  EXPECT_EQ(x.kind, "merged");
  EXPECT_EQ(x.path, "out/merged");
  EXPECT_EQ(x.tensors, 30);
  EXPECT_EQ(x.bytes, 16'060'522'496);
  EXPECT_EQ(x.seconds, 41.5);
}

DataRead file_data() {
  DataRead d;
  d.train = {"file(path=/d/train.jsonl, format=alpaca, n=40)", {40, 8000, 6000, "ab12"}};
  d.format = "alpaca";
  data::DataFileStats file;
  file.records = 45;
  file.skipped_bad = 2;
  file.dropped_too_long = 3;
  file.truncated = 4;
  d.file = file;
  d.lengths = {200.0, 180.0, 350.0, 512, 9};
  d.validation = DataSetRead{"file(path=/d/val.jsonl, format=alpaca, n=5)", {5, 900, 700, "cd34"}};
  d.files = {{"data.path", "/d/train.jsonl", 123'456, "ef56"}};
  return d;
}

TEST(Records, WhatTheDataIsReachesTheReportsDataSection) {
  const report::DataInfo r = data_record(file_data());
  EXPECT_EQ(r.source, "file(path=/d/train.jsonl, format=alpaca, n=40)");
  EXPECT_EQ(r.examples, 40);
  EXPECT_EQ(r.tokens, 8000);
  EXPECT_EQ(r.loss_tokens, 6000);
  EXPECT_EQ(r.fingerprint, "ab12");
  ASSERT_TRUE(r.statistics.has_value());
  EXPECT_EQ(r.statistics->format, "alpaca");
  // A data file's reader counts, the truncation among them.
  EXPECT_EQ(r.statistics->records, 45);
  EXPECT_EQ(r.statistics->skipped_bad, 2);
  EXPECT_EQ(r.statistics->dropped_too_long, 3);
  EXPECT_EQ(r.statistics->truncated, 4);
  EXPECT_EQ(r.statistics->mean_length, 200.0);
  EXPECT_EQ(r.statistics->p50_length, 180.0);
  EXPECT_EQ(r.statistics->p90_length, 350.0);
  EXPECT_EQ(r.statistics->max_length, 512);
  EXPECT_EQ(r.statistics->masked_fraction, 0.25);  // 1 - 6000 / 8000
  ASSERT_TRUE(r.validation.has_value());
  EXPECT_EQ(r.validation->source, "file(path=/d/val.jsonl, format=alpaca, n=5)");
  EXPECT_EQ(r.validation->examples, 5);
  EXPECT_EQ(r.validation->tokens, 900);
  EXPECT_EQ(r.validation->loss_tokens, 700);
  ASSERT_EQ(r.files.size(), 1u);
  EXPECT_EQ(r.files[0].key, "data.path");
  EXPECT_EQ(r.files[0].path, "/d/train.jsonl");
  EXPECT_EQ(r.files[0].bytes, 123'456);
  EXPECT_EQ(r.files[0].sha256, "ef56");

  // Synthetic data: every example a record, the truncation the lengths counted, no validation,
  // no file; a set without tokens has no masked share.
  DataRead synthetic;
  synthetic.train = {"synthetic(seed=1234, n=16)", {16, 0, 0, "00"}};
  synthetic.lengths.truncated = 3;
  const report::DataInfo s = data_record(synthetic);
  EXPECT_EQ(s.statistics->format, "synthetic");
  EXPECT_EQ(s.statistics->records, 16);
  EXPECT_EQ(s.statistics->skipped_bad, 0);
  EXPECT_EQ(s.statistics->dropped_too_long, 0);
  EXPECT_EQ(s.statistics->truncated, 3);
  EXPECT_EQ(s.statistics->masked_fraction, 0.0);
  EXPECT_FALSE(s.validation.has_value());
  EXPECT_TRUE(s.files.empty());
}

TEST(Records, TheWeightsAreRandomOrTheCheckpointsWithTheirRate) {
  const report::WeightsInfo random = weights_record(WeightsRead{});
  EXPECT_EQ(random.source, "random");
  EXPECT_EQ(random.path, "");
  EXPECT_EQ(random.format, "");
  EXPECT_EQ(random.files, 0);
  EXPECT_EQ(random.bytes_per_second, 0.0);
  EXPECT_EQ(random.fingerprint, "");

  const report::WeightsInfo read =
      weights_record({"models/tiny", 2, 30, 4'000'000, 0.5, "9f86d081884c7d65"});
  EXPECT_EQ(read.source, "checkpoint");
  EXPECT_EQ(read.path, "models/tiny");
  EXPECT_EQ(read.format, "safetensors");
  EXPECT_EQ(read.files, 2);
  EXPECT_EQ(read.tensors, 30);
  EXPECT_EQ(read.bytes, 4'000'000);
  EXPECT_EQ(read.seconds, 0.5);
  EXPECT_EQ(read.bytes_per_second, 8'000'000.0);
  EXPECT_EQ(read.fingerprint, "9f86d081884c7d65");
  // Read in no measurable time: no rate rather than an infinite one.
  EXPECT_EQ(weights_record({"m", 1, 1, 10, 0.0, "x"}).bytes_per_second, 0.0);
}

TEST(Records, HowTheStepRanReachesTheReportAndComesBackForAResume) {
  ExecutionChoices e;
  e.attention_kernel = "flash_attention";
  e.activation_checkpointing = "selective";
  e.checkpointing_choice =
      CheckpointingNeeds{70'000, true, {{"none", 90'000}, {"selective", 60'000}, {"full", 40'000}}};
  e.gpu_kernels = true;
  e.fused_blocks = false;
  const report::Execution r = execution_record(e);
  EXPECT_EQ(r.attention_kernel, "flash_attention");
  EXPECT_EQ(r.activation_checkpointing, "selective");
  EXPECT_TRUE(r.gpu_kernels);
  EXPECT_FALSE(r.fused_blocks);
  ASSERT_TRUE(r.checkpointing_choice.has_value());
  EXPECT_EQ(r.checkpointing_choice->usable_bytes, 70'000);
  EXPECT_TRUE(r.checkpointing_choice->fits);
  ASSERT_EQ(r.checkpointing_choice->needed_bytes.size(), 3u);
  EXPECT_EQ(r.checkpointing_choice->needed_bytes[1].policy, "selective");
  EXPECT_EQ(r.checkpointing_choice->needed_bytes[1].bytes, 60'000);

  const ExecutionChoices back = execution_from_report(r);
  EXPECT_EQ(back.attention_kernel, "flash_attention");
  EXPECT_EQ(back.activation_checkpointing, "selective");
  EXPECT_TRUE(back.gpu_kernels);
  EXPECT_FALSE(back.fused_blocks);
  ASSERT_TRUE(back.checkpointing_choice.has_value());
  EXPECT_EQ(back.checkpointing_choice->usable_bytes, 70'000);
  EXPECT_TRUE(back.checkpointing_choice->fits);
  EXPECT_EQ(back.checkpointing_choice->needed_bytes, e.checkpointing_choice->needed_bytes);
  // A policy the spec named: no choice.
  EXPECT_FALSE(execution_record(ExecutionChoices{}).checkpointing_choice.has_value());
}

TEST(Records, AProfileKeepsTwelveOpsTheAttentionOnesAndShortScopeNames) {
  ProfileWritten w;
  w.first_step = 3;
  w.last_step = 4;
  w.device_activity = true;
  w.trace = "r.profile-trace.json";
  w.ops_table = "r.profile-ops.csv";
  w.kernels_table = "r.profile-kernels.csv";
  w.tables.op_self_ns = 2'000'000'000;
  w.tables.kernel_ns = 1'500'000'000;
  w.tables.flops = 4'000'000'000;
  w.tables.leaf_input_bytes = 1024;
  w.tables.leaf_calls_without_bytes = 2;
  for (int i = 0; i < 14; ++i) {
    metrics::OpRow op;
    op.name = "aten::op" + std::to_string(i);
    op.calls = i + 1;
    op.self_ns = (14 - i) * 1'000'000;
    op.flops = i * 10;
    w.tables.ops.push_back(op);
  }
  w.tables.attention_ops = {"aten::op13", "aten::not_recorded"};
  metrics::ScopeRow scope;
  scope.name = "ftbench::forward";
  scope.calls = 2;
  scope.total_ns = 500'000'000;
  scope.self_ns = 250'000'000;
  w.tables.scopes = {scope};
  const report::Profile p = profile_record(w);
  EXPECT_EQ(p.first_step, 3);
  EXPECT_EQ(p.last_step, 4);
  EXPECT_TRUE(p.device_activity);
  EXPECT_EQ(p.trace, "r.profile-trace.json");
  EXPECT_EQ(p.ops_table, "r.profile-ops.csv");
  EXPECT_EQ(p.kernels_table, "r.profile-kernels.csv");
  EXPECT_EQ(p.op_self_seconds, 2.0);
  EXPECT_EQ(p.kernel_seconds, 1.5);
  EXPECT_EQ(p.flops, 4e9);
  EXPECT_EQ(p.leaf_input_bytes, 1024);
  EXPECT_EQ(p.leaf_calls_without_bytes, 2);
  ASSERT_EQ(p.scopes.size(), 1u);
  EXPECT_EQ(p.scopes[0].name, "forward");
  EXPECT_EQ(p.scopes[0].calls, 2);
  EXPECT_EQ(p.scopes[0].seconds, 0.5);
  EXPECT_EQ(p.scopes[0].self_seconds, 0.25);
  ASSERT_EQ(p.top_ops.size(), 12u);
  EXPECT_EQ(p.top_ops[0].name, "aten::op0");
  EXPECT_EQ(p.top_ops[0].self_seconds, 0.014);
  EXPECT_EQ(p.top_ops[11].name, "aten::op11");
  EXPECT_EQ(p.top_ops[11].calls, 12);
  EXPECT_EQ(p.top_ops[11].flops, 110.0);
  // Attention ops by name, among all ops (op13 is not among the first 12); one not recorded is
  // left out.
  ASSERT_EQ(p.attention_ops.size(), 1u);
  EXPECT_EQ(p.attention_ops[0].name, "aten::op13");
  EXPECT_EQ(p.attention_ops[0].self_seconds, 0.001);
}

}  // namespace
}  // namespace ftbench::report
