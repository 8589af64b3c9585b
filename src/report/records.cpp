#include "report/records.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "report/metrics/energy_summary.h"
#include "report/metrics/memory_peaks.h"

namespace ftbench::report {

report::StepRecord step_record(const train::StepMeasurement& s, int64_t segment) {
  report::StepRecord r;
  r.step = s.step;
  r.epoch = s.epoch;
  r.wall_seconds = s.wall_seconds;
  r.data_wait_seconds = s.data_wait_seconds;
  r.real_tokens = s.real_tokens;
  r.padded_tokens = s.padded_tokens;
  r.loss_tokens = s.loss_tokens;
  r.loss = s.loss;
  r.lr = s.lr;
  r.grad_norm = s.grad_norm;
  r.model_flops = s.model_flops;
  r.segment = segment;
  return r;
}

report::Fallback fallback_record(const train::MicroBatchFallback& f) {
  return report::Fallback{f.step,
                          f.from_micro_batch_size,
                          f.from_grad_accum_steps,
                          f.to_micro_batch_size,
                          f.to_grad_accum_steps,
                          f.seconds_lost,
                          f.error};
}

train::MicroBatchFallback fallback_from_report(const report::Fallback& f) {
  return train::MicroBatchFallback{f.step,
                                   f.from_micro_batch_size,
                                   f.from_grad_accum_steps,
                                   f.to_micro_batch_size,
                                   f.to_grad_accum_steps,
                                   f.seconds_lost,
                                   f.error};
}

report::HostInfo host_record(const device::HostFacts& h) {
  return report::HostInfo{h.hostname,          h.os,          h.kernel, h.cpu_model,
                          h.cpu_logical_cores, h.memory_bytes};
}

report::DeviceInfo device_record(const device::DeviceFacts& d) {
  report::DeviceInfo r;
  r.backend = d.backend;
  r.name = d.name;
  r.arch = d.arch;
  r.count = d.count;
  r.index = d.index;
  r.memory_bytes = d.memory_bytes;
  r.multiprocessor_count = d.multiprocessor_count;
  r.driver_version = d.driver_version;
  r.runtime_version = d.runtime_version;
  r.l2_cache_bytes = d.l2_cache_bytes;
  r.clock_khz = d.clock_khz;
  r.memory_clock_khz = d.memory_clock_khz;
  r.memory_bus_width_bits = d.memory_bus_width_bits;
  r.pci_bus_id = d.pci_bus_id;
  r.kernel_driver_version = d.kernel_driver_version;
  r.query_error = d.query_error;
  return r;
}

report::SoftwareInfo software_record(const device::SoftwareFacts& s) {
  report::SoftwareInfo r;
  r.ftbench_version = s.ftbench_version;
  r.git_commit = s.git_commit;
  r.libtorch_version = s.libtorch_version;
  r.compiler = s.compiler;
  r.build_type = s.build_type;
  r.intra_op_threads = s.intra_op_threads;
  r.inter_op_threads = s.inter_op_threads;
  r.blas = s.blas;
  r.omp_wait_policy = s.omp_wait_policy;
  r.host_allocator = s.host_allocator;
  r.libtorch_build = s.libtorch_build;
  r.container_image = s.container_image;
  return r;
}

report::Environment environment_record(const device::EnvironmentFacts& e) {
  report::Environment r;
  r.host = host_record(e.host);
  r.device = device_record(e.device);
  r.software = software_record(e.software);
  std::vector<report::EnvironmentVariable> variables;
  variables.reserve(e.variables.size());
  for (const auto& [name, value] : e.variables) variables.push_back({name, value});
  r.variables = std::move(variables);
  return r;
}

report::PhaseMemory phase_memory_record(const device::MemoryReading& m) {
  report::PhaseMemory r;
  r.peak_allocated_bytes = m.peak_allocated_bytes;
  r.peak_reserved_bytes = m.peak_reserved_bytes;
  r.peak_active_bytes = m.peak_active_bytes;
  r.device_used_peak_bytes = m.device_used_peak_bytes;
  r.peak_rss_bytes = m.peak_rss_bytes;
  r.rss_at_end_bytes = m.rss_at_end_bytes;
  return r;
}

report::Memory run_memory_record(const std::vector<TimedPhase>& phases,
                                 std::optional<int64_t> run_peak_rss_bytes,
                                 const device::DeviceMemoryCounters& counters) {
  std::vector<report::Phase> recorded;
  recorded.reserve(phases.size());
  for (const TimedPhase& p : phases) recorded.push_back(phase_record(p));
  report::Memory m = metrics::memory_peaks_over_phases(recorded);
  m.peak_rss_bytes = run_peak_rss_bytes;
  m.device_total_bytes = counters.device_total_bytes;
  m.allocation_retries = counters.allocation_retries;
  m.oom_count = counters.oom_count;
  return m;
}

report::Energy energy_record(const device::EnergyReadings& readings, int64_t segment,
                             const std::vector<report::StepRecord>& steps) {
  if (!readings.reason.empty()) {
    return metrics::unmeasured_energy(readings.reason, readings.interval_seconds, segment, steps);
  }
  return metrics::summarize_energy(readings.devices, readings.interval_seconds, segment, steps,
                                   readings.error);
}

report::Phase phase_record(const TimedPhase& p) {
  report::Phase r{p.name, p.start_seconds, p.seconds};
  if (p.memory) r.memory = phase_memory_record(*p.memory);
  return r;
}

report::Evaluation evaluation_record(const EvaluationPass& e) {
  return report::Evaluation{e.after_step, e.loss, e.loss_tokens, e.batches, e.seconds};
}

report::CheckpointSave checkpoint_record(const CheckpointWrite& c) {
  return report::CheckpointSave{c.step, c.segment, c.reason, c.path, c.bytes, c.seconds};
}

report::ExportRecord export_record(const ExportWrite& e) {
  return report::ExportRecord{e.kind, e.path, e.tensors, e.bytes, e.seconds};
}

report::InputFile input_file_record(const FileRead& f) {
  return report::InputFile{f.key, f.path, f.bytes, f.sha256};
}

report::DataInfo data_record(const DataRead& d) {
  const data::DataStats& train = d.train.counts;
  report::DataInfo r{d.train.description, train.examples, train.tokens, train.loss_tokens,
                     train.fingerprint};
  report::DataStatistics s;
  s.format = d.format;
  s.records = d.file ? d.file->records : train.examples;
  s.skipped_bad = d.file ? d.file->skipped_bad : 0;
  s.dropped_too_long = d.file ? d.file->dropped_too_long : 0;
  s.truncated = d.file ? d.file->truncated : d.lengths.truncated;
  s.mean_length = d.lengths.mean;
  s.p50_length = d.lengths.p50;
  s.p90_length = d.lengths.p90;
  s.max_length = d.lengths.max;
  s.masked_fraction =
      train.tokens > 0 ? 1.0 - double(train.loss_tokens) / double(train.tokens) : 0.0;
  r.statistics = s;
  if (d.validation) {
    const data::DataStats& v = d.validation->counts;
    r.validation =
        report::ValidationDataInfo{d.validation->description, v.examples, v.tokens, v.loss_tokens};
  }
  for (const FileRead& f : d.files) r.files.push_back(input_file_record(f));
  return r;
}

report::WeightsInfo weights_record(const WeightsRead& w) {
  if (w.checkpoint.empty()) return report::WeightsInfo{"random", "", "", 0, 0, 0, 0.0, 0.0, ""};
  return report::WeightsInfo{"checkpoint",  w.checkpoint,
                             "safetensors", w.files,
                             w.tensors,     w.bytes,
                             w.seconds,     w.seconds > 0.0 ? double(w.bytes) / w.seconds : 0.0,
                             w.fingerprint};
}

report::CheckpointingChoice checkpointing_choice_record(const CheckpointingNeeds& n) {
  report::CheckpointingChoice r;
  r.usable_bytes = n.usable_bytes;
  r.fits = n.fits;
  for (const auto& [policy, bytes] : n.needed_bytes) r.needed_bytes.push_back({policy, bytes});
  return r;
}

CheckpointingNeeds checkpointing_needs_from_report(const report::CheckpointingChoice& c) {
  CheckpointingNeeds n;
  n.usable_bytes = c.usable_bytes;
  n.fits = c.fits;
  for (const report::PolicyNeed& p : c.needed_bytes) n.needed_bytes.emplace_back(p.policy, p.bytes);
  return n;
}

report::Execution execution_record(const ExecutionChoices& e) {
  report::Execution r;
  r.attention_kernel = e.attention_kernel;
  r.activation_checkpointing = e.activation_checkpointing;
  if (e.checkpointing_choice)
    r.checkpointing_choice = checkpointing_choice_record(*e.checkpointing_choice);
  r.gpu_kernels = e.gpu_kernels;
  r.fused_blocks = e.fused_blocks;
  return r;
}

ExecutionChoices execution_from_report(const report::Execution& e) {
  ExecutionChoices x;
  x.attention_kernel = e.attention_kernel;
  x.activation_checkpointing = e.activation_checkpointing;
  if (e.checkpointing_choice)
    x.checkpointing_choice = checkpointing_needs_from_report(*e.checkpointing_choice);
  x.gpu_kernels = e.gpu_kernels;
  x.fused_blocks = e.fused_blocks;
  return x;
}

namespace {

constexpr std::size_t kTopOps = 12;

report::ProfileOp op_record(const metrics::OpRow& row) {
  return {row.name, row.calls, double(row.self_ns) / 1e9, double(row.flops)};
}

std::string short_scope(const std::string& name) {
  constexpr std::string_view kPrefix = "ftbench::";
  return name.rfind(kPrefix, 0) == 0 ? name.substr(kPrefix.size()) : name;
}

}  // namespace

report::Profile profile_record(const ProfileWritten& w) {
  const metrics::ProfileTables& tables = w.tables;
  report::Profile p;
  p.first_step = w.first_step;
  p.last_step = w.last_step;
  p.trace = w.trace;
  p.ops_table = w.ops_table;
  p.kernels_table = w.kernels_table;
  p.device_activity = w.device_activity;
  p.op_self_seconds = double(tables.op_self_ns) / 1e9;
  p.kernel_seconds = double(tables.kernel_ns) / 1e9;
  p.flops = double(tables.flops);
  p.leaf_input_bytes = tables.leaf_input_bytes;
  p.leaf_calls_without_bytes = tables.leaf_calls_without_bytes;
  for (const metrics::ScopeRow& s : tables.scopes) {
    p.scopes.push_back(
        {short_scope(s.name), s.calls, double(s.total_ns) / 1e9, double(s.self_ns) / 1e9});
  }
  for (std::size_t i = 0; i < tables.ops.size() && i < kTopOps; ++i) {
    p.top_ops.push_back(op_record(tables.ops[i]));
  }
  for (const std::string& name : tables.attention_ops) {
    const auto it = std::find_if(tables.ops.begin(), tables.ops.end(),
                                 [&](const metrics::OpRow& r) { return r.name == name; });
    if (it != tables.ops.end()) p.attention_ops.push_back(op_record(*it));
  }
  return p;
}

}  // namespace ftbench::report
