#include "report/report_builder.h"

#include <memory>
#include <optional>
#include <utility>

#include "device/process_clock.h"
#include "report/metrics/rank_figures.h"
#include "report/metrics/run_summary.h"
#include "report/records.h"
#include "report/report.h"
#include "util/text/iso8601.h"

namespace ftbench::report {

struct ReportBuilder::State {
  report::Report report;
  EarlierSegments earlier;
  std::optional<report::Distributed> distributed;
};

ReportBuilder::ReportBuilder(const device::ProcessClock& clock)
    : clock_(clock), state_(std::make_unique<State>()) {}

ReportBuilder::~ReportBuilder() = default;

void ReportBuilder::resume(EarlierSegments earlier) {
  state_->earlier = std::move(earlier);
  state_->report.segments = state_->earlier.segments;
}

const std::vector<report::Segment>& ReportBuilder::earlier_segments() const {
  return state_->earlier.segments;
}

int64_t ReportBuilder::segment_index() const {
  return static_cast<int64_t>(state_->earlier.segments.size()) + 1;
}

double ReportBuilder::time_to_first_step_seconds() const {
  return first_step_end_ > 0.0 ? first_step_end_ + measured_.start.t0_before_process_seconds : 0.0;
}

std::vector<report::StepRecord> ReportBuilder::segment_steps(
    const train::TrainResult& result) const {
  std::vector<report::StepRecord> out;
  out.reserve(result.steps.size());
  for (const train::StepMeasurement& s : result.steps)
    out.push_back(step_record(s, segment_index()));
  return out;
}

report::Segment ReportBuilder::segment(const std::string& status, const train::TrainResult& result,
                                       std::optional<int64_t> intra_op_threads) const {
  const double now = clock_.now();
  report::Segment g;
  g.index = segment_index();
  g.status = status;
  g.started_at_utc = measured_.start.started_at_utc;
  g.finished_at_utc = text::iso8601_utc(clock_.start_epoch_seconds() + now);
  if (!result.steps.empty()) {
    g.first_step = result.steps.front().step;
    g.last_step = result.steps.back().step;
  }
  g.run_seconds = measured_.start.t0_before_process_seconds + now;
  g.time_to_first_step_seconds = time_to_first_step_seconds();
  g.resumed_from = state_->earlier.resumed_from;
  g.intra_op_threads = intra_op_threads;
  return g;
}

std::vector<report::Segment> ReportBuilder::all_segments(const report::Segment& current) const {
  std::vector<report::Segment> all = state_->earlier.segments;
  all.push_back(current);
  return all;
}

void ReportBuilder::distributed(report::Distributed section) {
  state_->distributed = std::move(section);
}

void ReportBuilder::map_measurements(report::Report& r) const {
  const Measured& m = measured_;
  r.run_name = m.start.run_name;
  r.working_directory = m.start.working_directory;
  r.world_size = m.start.world_size;
  r.started_at_utc = m.start.started_at_utc;
  r.spec_path = m.start.spec_path;
  r.spec = m.start.spec;
  r.spec_fingerprint = m.start.spec_fingerprint;
  r.t0_source = m.start.t0_source;
  r.t0_before_process_seconds = m.start.t0_before_process_seconds;
  r.error = m.error;
  r.parameters = {m.parameters.base, m.parameters.lora, m.parameters.total()};
  r.derived = {m.derived.effective_batch, m.derived.micro_batches_per_epoch,
               m.derived.steps_per_epoch, m.derived.total_steps, m.derived.max_tokens_per_step};
  r.phases.clear();
  for (const TimedPhase& p : m.phases) r.phases.push_back(phase_record(p));
  r.evaluations = state_->earlier.evaluations;
  for (const EvaluationPass& e : m.evaluations) r.evaluations.push_back(evaluation_record(e));
  r.checkpoints = state_->earlier.checkpoints;
  for (const CheckpointWrite& c : m.checkpoints) r.checkpoints.push_back(checkpoint_record(c));
  r.exports.clear();
  for (const ExportWrite& x : m.exports) r.exports.push_back(export_record(x));
  r.data = m.data ? std::optional<report::DataInfo>(data_record(*m.data)) : std::nullopt;
  r.weights =
      m.weights ? std::optional<report::WeightsInfo>(weights_record(*m.weights)) : std::nullopt;
  r.execution =
      m.execution ? std::optional<report::Execution>(execution_record(*m.execution)) : std::nullopt;
  r.profile = m.profile ? std::optional<report::Profile>(profile_record(*m.profile)) : std::nullopt;
  r.gemm = m.gemm;
}

std::vector<model::StepFlops> ReportBuilder::assemble(const std::string& status,
                                                      const train::TrainResult& result,
                                                      const metrics::SummaryOptions& summary,
                                                      DeviceSections readings) {
  report::Report& r = state_->report;
  map_measurements(r);
  const EarlierSegments& earlier = state_->earlier;
  r.status = status;
  r.time_to_first_step_seconds = time_to_first_step_seconds();
  r.steps = earlier.steps;
  const std::vector<report::StepRecord> own = segment_steps(result);
  r.steps.insert(r.steps.end(), own.begin(), own.end());
  std::vector<model::StepFlops> flops = earlier.flops;
  flops.insert(flops.end(), result.flops.begin(), result.flops.end());
  std::vector<report::Fallback> fallbacks;
  for (const train::MicroBatchFallback& f : result.fallbacks)
    fallbacks.push_back(fallback_record(f));
  r.batching =
      report::Batching{result.micro_batch_size, result.grad_accum_steps, std::move(fallbacks)};
  r.summary = metrics::summarize_run(r.steps, flops, summary);
  set_memory(std::move(readings.memory));
  r.environment = std::move(readings.environment);
  if (measured_.energy) r.energy = energy_record(*measured_.energy, segment_index(), own);
  if (state_->distributed) {
    r.distributed = *state_->distributed;
    metrics::summarize_ranks(*r.distributed, summary.warmup_steps, r.summary.tokens_per_second_real,
                             measured_.start.world_size);
  }
  r.finished_at_utc = text::iso8601_utc(clock_.start_epoch_seconds() + clock_.now());
  r.segments = all_segments(segment(status, result, readings.intra_op_threads));
  return flops;
}

const report::Report& ReportBuilder::report() const { return state_->report; }

void ReportBuilder::set_memory(report::Memory memory) {
  report::Report& r = state_->report;
  r.memory = std::move(memory);
  if (measured_.memory_prediction) {
    r.memory.predicted_peak_bytes = measured_.memory_prediction->peak_bytes;
    r.memory.prediction_basis = measured_.memory_prediction->basis;
  }
}

void ReportBuilder::before_write(report::Memory memory) {
  map_measurements(state_->report);
  set_memory(std::move(memory));
  state_->report.finished_at_utc = text::iso8601_utc(clock_.start_epoch_seconds() + clock_.now());
}

nlohmann::ordered_json ReportBuilder::report_json_now() const {
  report::Report now = state_->report;
  map_measurements(now);
  return report::to_json(now);
}

}  // namespace ftbench::report
